//! Scenario agent-cost (issue 49 item 9): what an agent pays per task, over MCP — tool calls, the bytes and the
//! estimated tokens a model reads (text and images, `cost_model.rs`), and the elapsed tool time — for a fixed list
//! of tasks, scripted as an agent would do them from what the tools return, on simulated phones that charge a real
//! phone's command costs (`PhoneCosts::phone()`).
//!
//! Sides, each with its own simulated phone (identical phones on one private adb server), task by task in turn:
//! - **after**: this build's `/mcp` (JSON-RPC over HTTP, the small client below);
//! - **before**: another build (`BENCH_BEFORE_BIN`; `bench/run.sh agent-cost` builds the commit before issue 49's
//!   work), same client and script;
//! - **peer**: mobile-mcp 1.0.4 over stdio (`BENCH_PEER_MCP` = its `lib/index.js`, installed by `bench/run.sh` into
//!   `target/`), its adb commands sent to the bench's adb server by `ANDROID_HOME` pointing at a `platform-tools/adb`
//!   script that runs `adb -P PORT` (mobile-mcp and its `mobilecli` both take adb from `$ANDROID_HOME`).
//!
//! The script adapts to the tool list as an agent would: a tap with `repeat` is one call for three taps; a side
//! with `android_batch` does a task's known steps in one call. Success is checked out of band on the phone (the
//! counter, the field's text, the taps the Settings app saw, the foreground app), never from the tools' words.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use xagent_adb_connector::sim::{PhoneCosts, SimConfig, SimPhone};

use crate::common::*;
use crate::cost_model::{measure, Cost};

/// The tasks, in order; `key` is the JSON key, `label` what the table says.
pub(crate) const TASKS: [(&str, &str); 5] = [
    ("home", "read the home screen"),
    ("counter3", "make the counter show 3"),
    ("about_phone", "open Settings and open \"About phone\""),
    ("type_read_back", "type into a field and read it back"),
    ("launch_back", "launch an app and go back"),
];

const SETTINGS: &str = "com.android.settings";
const DEMO: &str = "com.xagent.demo";
const FIELD_ID: &str = "com.xagent.sim:id/input";

// ---------------------------------------------------------------------------------------------------------------
// Clients

/// A minimal MCP client of the connector's `/mcp` (Streamable HTTP, JSON answers): one connection per request.
pub(crate) struct HttpMcp {
    addr: SocketAddr,
    sid: Option<String>,
    seq: u64,
}

impl HttpMcp {
    fn post(&mut self, body: &Value) -> Result<Value, String> {
        let mut s = TcpStream::connect(self.addr).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(180))).map_err(|e| e.to_string())?;
        let b = body.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, \
             text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.addr,
            b.len()
        );
        if let Some(sid) = &self.sid {
            head.push_str(&format!("Mcp-Session-Id: {sid}\r\nMcp-Protocol-Version: 2025-06-18\r\n"));
        }
        s.write_all(format!("{head}\r\n{b}").as_bytes()).map_err(|e| e.to_string())?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).map_err(|e| e.to_string())?;
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no header end")?;
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let mut body = raw[split + 4..].to_vec();
        let header = |name: &str| {
            head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
        };
        if let Some(sid) = header("mcp-session-id") {
            self.sid = Some(sid);
        }
        if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            body = dechunk(&body);
        }
        if body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&body).map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&body)))
    }

    fn rpc(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.seq += 1;
        self.post(&json!({"jsonrpc": "2.0", "id": self.seq, "method": method, "params": params}))
    }
}

fn dechunk(b: &[u8]) -> Vec<u8> {
    let (mut out, mut i) = (Vec::new(), 0);
    while let Some(nl) = b[i..].windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&b[i..i + nl]).trim(), 16).unwrap_or(0);
        i += nl + 2;
        if size == 0 || i + size > b.len() {
            break;
        }
        out.extend_from_slice(&b[i..i + size]);
        i += size + 2;
    }
    out
}

/// mobile-mcp over stdio (newline-delimited JSON-RPC).
pub(crate) struct StdioMcp {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
    seq: u64,
}

impl StdioMcp {
    fn send(&mut self, v: &Value) -> Result<(), String> {
        writeln!(self.stdin, "{v}").and_then(|_| self.stdin.flush()).map_err(|e| e.to_string())
    }

    fn rpc(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.seq += 1;
        let id = self.seq;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.out.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err("mobile-mcp closed its output".into());
            }
            let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
            if v["id"] == id {
                return Ok(v);
            }
        }
    }
}

impl Drop for StdioMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

enum Client {
    Ours(HttpMcp),
    Peer(StdioMcp),
}

/// One side: its client, its phone, the tools it lists, what it spent per task.
struct Side {
    name: &'static str,
    client: Client,
    sim: SimPhone,
    serial: String,
    tools: Map<String, Value>,
    tools_list_bytes: usize,
    _conn: Option<Connector>,
}

impl Side {
    fn rpc(&mut self, method: &str, params: Value) -> Result<Value, String> {
        match &mut self.client {
            Client::Ours(c) => c.rpc(method, params),
            Client::Peer(c) => c.rpc(method, params),
        }
    }

    /// One `tools/call`: its cost and the text a model reads of it.
    fn call(&mut self, tool: &str, args: Value) -> (Cost, String) {
        let t = Instant::now();
        let answer = self.rpc("tools/call", json!({"name": tool, "arguments": args}));
        let ms = ms(t.elapsed());
        let answer = answer.unwrap_or_else(|e| json!({"error": {"message": e}}));
        let (mut c, text) = measure(&answer, xagent_adb_connector::base64::decode);
        c.ms = ms;
        (c, text)
    }

    fn has_arg(&self, tool: &str, arg: &str) -> bool {
        self.tools.get(tool).is_some_and(|t| !t["inputSchema"]["properties"][arg].is_null())
    }

    fn initialize(&mut self) {
        let init = self.rpc(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "agent-cost-bench", "version": "1"}}),
        );
        assert!(init.as_ref().is_ok_and(|v| v.get("result").is_some()), "{}: initialize: {init:?}", self.name);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        match &mut self.client {
            Client::Ours(c) => drop(c.post(&note)),
            Client::Peer(c) => drop(c.send(&note)),
        }
        let list = self.rpc("tools/list", json!({})).unwrap_or_else(|e| panic!("{}: tools/list: {e}", self.name));
        self.tools_list_bytes = list["result"].to_string().len();
        for t in list["result"]["tools"].as_array().into_iter().flatten() {
            self.tools.insert(t["name"].as_str().unwrap_or_default().to_owned(), t.clone());
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Setup

fn start_phone(sim_rt: &tokio::runtime::Runtime, adb: &Adb) -> (SimPhone, String) {
    let cfg = SimConfig { costs: PhoneCosts::phone(), ..SimConfig::default() };
    let sim = sim_rt.block_on(SimPhone::start("127.0.0.1:0".parse().unwrap(), cfg)).unwrap();
    let serial = sim.serial();
    adb.connect_all(std::slice::from_ref(&serial));
    (sim, serial)
}

fn ours(name: &'static str, bin: &str, adb: &Adb, sim: SimPhone, serial: String) -> Side {
    let conn = Connector::start_bin(bin, adb.port, QUIET_LOG, &[]);
    let client = Client::Ours(HttpMcp { addr: conn.addr, sid: None, seq: 0 });
    let mut s = Side { name, client, sim, serial, tools: Map::new(), tools_list_bytes: 0, _conn: Some(conn) };
    s.initialize();
    // Bind this side's own phone (the others are on the same adb server); retried while the phone is verified.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let serial = s.serial.clone();
        let (c, text) = s.call("select_device", json!({"serial": serial}));
        if c.errors == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{name}: select_device never bound {serial}: {text}");
        std::thread::sleep(Duration::from_millis(200));
    }
    s
}

/// mobile-mcp started over stdio with `ANDROID_HOME` pointing at an `adb` that talks to the bench's adb server.
fn peer(index_js: &str, adb: &Adb, sim: SimPhone, serial: String) -> Result<Side, String> {
    let home = adb.home.path().join("android-home");
    let tools = home.join("platform-tools");
    std::fs::create_dir_all(&tools).map_err(|e| e.to_string())?;
    let shim = tools.join("adb");
    let real = which("adb").ok_or("no adb on PATH")?;
    std::fs::write(&shim, format!("#!/bin/sh\nexec {} -P {} \"$@\"\n", real.display(), adb.port))
        .map_err(|e| e.to_string())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
    let mut child = Command::new("node")
        .arg(index_js)
        .env("ANDROID_HOME", &home)
        .env("ANDROID_ADB_SERVER_PORT", adb.port.to_string())
        .env("HOME", adb.home.path())
        .env("MOBILEMCP_DISABLE_TELEMETRY", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("node {index_js}: {e}"))?;
    let (stdin, out) = (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()));
    let client = Client::Peer(StdioMcp { child, stdin, out, seq: 0 });
    let mut s = Side { name: "peer", client, sim, serial, tools: Map::new(), tools_list_bytes: 0, _conn: None };
    s.initialize();
    let (_, text) = s.call("mobile_list_available_devices", json!({}));
    if !text.contains(&s.serial) {
        return Err(format!("mobile-mcp does not list the simulated phone {}: {text}", s.serial));
    }
    Ok(s)
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| std::path::Path::new(d).join(name)).find(|p| p.is_file())
}

// ---------------------------------------------------------------------------------------------------------------
// The tasks, as an agent does them

/// What one task cost a side, and whether the phone shows it done.
struct Outcome {
    cost: Cost,
    ok: bool,
    tools: Vec<String>,
    /// The last answer's text (printed when the task failed).
    last: String,
}

struct Run<'a> {
    side: &'a mut Side,
    cost: Cost,
    tools: Vec<String>,
    last: String,
}

impl Run<'_> {
    fn call(&mut self, tool: &str, args: Value) -> String {
        let (c, text) = self.side.call(tool, args);
        self.cost.add(&c);
        self.tools.push(tool.to_owned());
        self.last = text.chars().take(400).collect();
        text
    }

    fn peer(&self) -> bool {
        matches!(self.side.client, Client::Peer(_))
    }

    fn dev(&self, mut args: Value) -> Value {
        args["device"] = json!(self.side.serial);
        args
    }

    /// The peer's look at a screen: the element list (+ the screenshot when `picture`); ours: `android_observe`
    /// (both), or `android_ui_dump` for a check that needs no picture.
    fn look(&mut self, picture: bool) -> String {
        if self.peer() {
            let mut t = self.call("mobile_list_elements_on_screen", self.dev(json!({})));
            if picture {
                t.push_str(&self.call("mobile_take_screenshot", self.dev(json!({}))));
            }
            t
        } else if picture {
            self.call("android_observe", json!({}))
        } else {
            self.call("android_ui_dump", json!({}))
        }
    }

    /// The peer's ref (`@eN`) of the first listed element whose line holds `needle`.
    fn peer_ref(text: &str, needle: &str) -> Option<String> {
        text.lines().find(|l| l.starts_with("@e") && l.contains(needle)).map(|l| l.split(' ').next().unwrap().into())
    }
}

/// Out-of-band reset before each task (not counted): home screen, the Settings list at its top.
fn reset(adb: &Adb, side: &Side) {
    let s = side.serial.as_str();
    if side.sim.settings_offset() > 0 {
        adb.run(&["-s", s, "shell", "am", "start", "-n", "com.android.settings/.Settings"], None);
        for _ in 0..6 {
            if side.sim.settings_offset() == 0 {
                break;
            }
            adb.run(&["-s", s, "shell", "input", "swipe", "540", "700", "540", "2100", "300"], None);
        }
    }
    adb.run(&["-s", s, "shell", "am", "force-stop", SETTINGS], None);
    adb.run(&["-s", s, "shell", "am", "force-stop", DEMO], None);
    adb.run(&["-s", s, "shell", "input", "keyevent", "KEYCODE_HOME"], None);
}

fn run_task(key: &str, side: &mut Side, round: usize) -> Outcome {
    let counter0 = side.sim.counter();
    let clicks0 = side.sim.clicks().len();
    let token = format!("note{round}");
    let mut r = Run { side, cost: Cost::default(), tools: Vec::new(), last: String::new() };
    let peer = r.peer();
    let ok = match key {
        "home" => r.look(true).contains("Increment"),
        "counter3" => {
            let seen = r.look(true);
            if peer {
                let at = Run::peer_ref(&seen, "\"Increment\"").unwrap_or_default();
                for _ in 0..3 {
                    r.call("mobile_click_on_screen_at_coordinates", r.dev(json!({"ref": at})));
                }
                r.look(false);
            } else {
                let el = json!({"text": "Increment"});
                let last = if r.side.has_arg("android_tap", "repeat") {
                    r.call("android_tap", json!({"element": el, "repeat": 3}))
                } else {
                    (0..3).map(|_| r.call("android_tap", json!({"element": el}))).last().unwrap()
                };
                if !last.contains("Count: 3") {
                    r.look(false);
                }
            }
            r.side.sim.counter() == counter0 + 3
        }
        "about_phone" => {
            if peer {
                r.call("mobile_launch_app", r.dev(json!({"packageName": SETTINGS})));
                let mut seen = r.look(false);
                for _ in 0..8 {
                    if Run::peer_ref(&seen, "\"About phone\"").is_some() {
                        break;
                    }
                    r.call("mobile_swipe_on_screen", r.dev(json!({"direction": "up"})));
                    seen = r.look(false);
                }
                let at = Run::peer_ref(&seen, "\"About phone\"").unwrap_or_default();
                r.call("mobile_click_on_screen_at_coordinates", r.dev(json!({"ref": at})));
            } else {
                let steps = [
                    ("android_app_launch", json!({"package": SETTINGS})),
                    ("android_scroll", json!({"direction": "down", "until": {"text": "About phone"}})),
                    ("android_tap", json!({"element": {"text": "About phone"}})),
                ];
                let batched = r.side.tools.contains_key("android_batch") && {
                    let steps: Vec<Value> = steps.iter().map(|(t, a)| json!({"tool_id": t, "arguments": a})).collect();
                    let before = r.cost.errors;
                    r.call("android_batch", json!({"steps": steps}));
                    r.cost.errors == before
                };
                if !batched {
                    for (t, a) in steps {
                        r.call(t, a);
                    }
                }
            }
            r.side.sim.clicks()[clicks0..].iter().any(|c| c.contains("About phone"))
        }
        "type_read_back" => {
            if peer {
                let seen = r.look(false);
                let at = Run::peer_ref(&seen, FIELD_ID).unwrap_or_default();
                r.call("mobile_click_on_screen_at_coordinates", r.dev(json!({"ref": at})));
                r.call("mobile_type_keys", r.dev(json!({"text": token, "submit": false})));
                r.look(false);
            } else {
                let said = r.call("android_input_text", json!({"element": {"resource_id": FIELD_ID}, "text": token}));
                if !said.contains(&token) {
                    r.look(false);
                }
            }
            r.side.sim.fields().0.contains(&token)
        }
        "launch_back" => {
            if peer {
                r.call("mobile_launch_app", r.dev(json!({"packageName": DEMO})));
                r.look(false);
                r.call("mobile_press_button", r.dev(json!({"button": "BACK"})));
                r.look(false);
            } else {
                r.call("android_app_launch", json!({"package": DEMO}));
                let back = r.call("android_key", json!({"key": "BACK"}));
                if !back.contains("launcher3") && !back.contains("Sim Home") {
                    r.look(false);
                }
            }
            r.side.sim.foreground().contains("launcher3")
        }
        other => panic!("unknown task {other}"),
    };
    Outcome { cost: r.cost, ok, tools: r.tools, last: r.last }
}

// ---------------------------------------------------------------------------------------------------------------
// The scenario

fn cost_json(c: &Cost) -> Value {
    json!({"calls": c.calls, "bytes": c.bytes(), "text_bytes": c.text_bytes, "image_bytes": c.image_bytes,
           "images": c.images, "image_px": c.image_px.first().map(|(w, h)| format!("{w}x{h}")),
           "text_tokens": c.text_tokens, "image_tokens_anthropic": c.image_tokens_anthropic,
           "image_tokens_openai": c.image_tokens_openai, "tokens_anthropic": c.tokens_anthropic(),
           "tokens_openai": c.tokens_openai(), "structured_bytes": c.structured_bytes, "errors": c.errors,
           "tool_ms": round3(c.ms)})
}

pub(crate) fn bench_agent_cost(sim_rt: &tokio::runtime::Runtime, rep: &mut Report) {
    let rounds = env_usize("BENCH_COST_ROUNDS", if quick() { 1 } else { 3 });
    let adb = Adb::start();
    let mut sides: Vec<Side> = Vec::new();
    let (sim, serial) = start_phone(sim_rt, &adb);
    sides.push(ours("after", BIN, &adb, sim, serial));
    if let Some(bin) = std::env::var("BENCH_BEFORE_BIN").ok().filter(|b| std::path::Path::new(b).is_file()) {
        let (sim, serial) = start_phone(sim_rt, &adb);
        sides.push(ours("before", &bin, &adb, sim, serial));
    }
    let mut peer_note = String::from("not run: BENCH_PEER_MCP (mobile-mcp's lib/index.js) is not set");
    if let Some(js) = std::env::var("BENCH_PEER_MCP").ok().filter(|p| std::path::Path::new(p).is_file()) {
        let (sim, serial) = start_phone(sim_rt, &adb);
        match peer(&js, &adb, sim, serial) {
            Ok(s) => {
                peer_note = "ran".into();
                sides.push(s);
            }
            Err(e) => peer_note = format!("could not run: {e}"),
        }
    }
    eprintln!("agent-cost: sides {:?}; peer {peer_note}", sides.iter().map(|s| s.name).collect::<Vec<_>>());

    // Warm-up (not counted): every side reads its phone once (helper start, first dump).
    for s in sides.iter_mut() {
        reset(&adb, s);
        let mut r = Run { side: s, cost: Cost::default(), tools: Vec::new(), last: String::new() };
        r.look(true);
    }

    // Tasks: round by round, task by task, side by side (drift hits every side alike).
    let mut per: Vec<Vec<(Cost, u32, Vec<String>)>> =
        sides.iter().map(|_| TASKS.iter().map(|_| (Cost::default(), 0, Vec::new())).collect()).collect();
    for round in 0..rounds {
        for (ti, (key, _)) in TASKS.iter().enumerate() {
            for (si, s) in sides.iter_mut().enumerate() {
                reset(&adb, s);
                let o = run_task(key, s, round);
                if !o.ok {
                    eprintln!("agent-cost: {} failed {key} (round {round}): {:?}; last: {}", s.name, o.tools, o.last);
                    // What reached the phone's input (a gesture the simulated phone did not act on shows here).
                    let input: Vec<String> = s.sim.commands().into_iter().filter(|c| c.contains("input")).collect();
                    eprintln!(
                        "agent-cost: {}'s last input commands: {:?}; Settings list scrolled {} px, foreground {}",
                        s.name,
                        &input[input.len().saturating_sub(6)..],
                        s.sim.settings_offset(),
                        s.sim.foreground()
                    );
                }
                let slot = &mut per[si][ti];
                slot.0.add(&o.cost);
                slot.1 += o.ok as u32;
                slot.2 = o.tools;
            }
        }
    }

    // One screen's look per side: ours `android_observe` (default arguments), the peer's list + screenshot.
    let mut screens = serde_json::Map::new();
    for (screen, open) in [("home", None), ("settings", Some(SETTINGS)), ("demo_list", Some(DEMO))] {
        let mut row = serde_json::Map::new();
        for s in sides.iter_mut() {
            reset(&adb, s);
            if let Some(pkg) = open {
                let serial = s.serial.clone();
                let launcher = "android.intent.category.LAUNCHER";
                adb.run(&["-s", &serial, "shell", "monkey", "-p", pkg, "-c", launcher, "1"], None);
            }
            let name = s.name;
            let mut r = Run { side: s, cost: Cost::default(), tools: Vec::new(), last: String::new() };
            r.look(true);
            row.insert(name.into(), cost_json(&r.cost));
        }
        screens.insert(screen.into(), Value::Object(row));
    }

    // The default image size, measured: ours at other `max_side`s on the home screen (the pictures are kept in
    // target/agent-cost/ to be looked at).
    let mut sizes = serde_json::Map::new();
    if let Some(s) = sides.iter_mut().find(|s| s.name == "after") {
        reset(&adb, s);
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/agent-cost");
        let _ = std::fs::create_dir_all(&dir);
        // A build whose default leaves the picture out when the elements describe the screen is asked for it.
        let picture = s.has_arg("android_observe", "picture");
        for side in [1280u32, 1024, 896, 768, 640, 512] {
            let mut args = json!({"max_side": side});
            if picture {
                args["picture"] = json!(true);
            }
            let answer = s.rpc("tools/call", json!({"name": "android_observe", "arguments": args}));
            let answer = answer.unwrap_or(Value::Null);
            let (c, _) = measure(&answer, xagent_adb_connector::base64::decode);
            if let Some(img) =
                answer["result"]["content"].as_array().into_iter().flatten().find(|i| i["type"] == "image")
            {
                let data = xagent_adb_connector::base64::decode(img["data"].as_str().unwrap_or_default());
                let _ = std::fs::write(dir.join(format!("observe-{side}.jpg")), data.unwrap_or_default());
            }
            sizes.insert(side.to_string(), cost_json(&c));
        }
    }

    let mut tasks = serde_json::Map::new();
    for (ti, (key, label)) in TASKS.iter().enumerate() {
        let mut row = serde_json::Map::new();
        row.insert("label".into(), json!(label));
        for (si, s) in sides.iter().enumerate() {
            let (c, ok, tools) = &per[si][ti];
            let n = rounds as f64;
            let mut v = cost_json(c);
            // Per task (the mean of the rounds), and how many rounds the phone showed it done.
            for k in ["calls", "bytes", "text_bytes", "image_bytes", "tokens_anthropic", "tokens_openai", "tool_ms"] {
                v[k] = json!(round3(v[k].as_f64().unwrap_or(0.0) / n));
            }
            v["succeeded"] = json!(format!("{ok}/{rounds}"));
            v["tools"] = json!(tools);
            row.insert(s.name.into(), v);
        }
        tasks.insert((*key).into(), Value::Object(row));
    }
    let list_bytes: Map<String, Value> =
        sides.iter().map(|s| (s.name.to_string(), json!(s.tools_list_bytes))).collect();
    let result = json!({"rounds": rounds, "peer": peer_note, "tasks": tasks, "observe_vs_peer_look": screens,
                        "observe_max_side": sizes, "tools_list_bytes": list_bytes,
                        "estimators": "text tokens = ceil(UTF-8 bytes / 4); image tokens: Anthropic ceil(w*h/750) \
                                       after fitting 1568 px / 1.15 MP, OpenAI 85 + 170 x 512-px tiles after fitting \
                                       2048 px and a 768 px short side; bytes = text + base64 image"});
    summary_rows(&result, rep);
    rep.json.insert("agent_cost".into(), result);
    for s in sides {
        let sim = s.sim;
        drop(s.client);
        drop(s._conn);
        sim_rt.block_on(sim.shutdown());
    }
}

/// The console table's rows: per task, after vs before and vs the peer (bytes, tokens, calls).
fn summary_rows(r: &Value, rep: &mut Report) {
    let f = |v: &Value| {
        if v.is_null() {
            return "–".to_string();
        }
        format!(
            "{} calls, {:.0} B, {:.0} tok (OpenAI {:.0}), {:.0} ms, ok {}",
            v["calls"],
            v["bytes"].as_f64().unwrap_or(0.0),
            v["tokens_anthropic"].as_f64().unwrap_or(0.0),
            v["tokens_openai"].as_f64().unwrap_or(0.0),
            v["tool_ms"].as_f64().unwrap_or(0.0),
            v["succeeded"].as_str().unwrap_or("?")
        )
    };
    for (key, row) in r["tasks"].as_object().into_iter().flatten() {
        let (a, b, p) = (&row["after"], &row["before"], &row["peer"]);
        let ratio = |x: &Value| {
            let (n, d) = (a["bytes"].as_f64().unwrap_or(0.0), x["bytes"].as_f64().unwrap_or(0.0));
            if d > 0.0 {
                format!("{:.3}", n / d)
            } else {
                "–".into()
            }
        };
        let baseline = format!("before: {} / peer: {}", f(b), f(p));
        let ratios = format!("bytes {} vs before, {} vs peer", ratio(b), ratio(p));
        rep.row(&format!("agent-cost {key}"), f(a), baseline, ratios, "≤ 0.5 bytes vs before", None);
    }
}
