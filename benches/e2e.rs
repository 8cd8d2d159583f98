//! End-to-end benchmark (issue #8): the connector against the tools operators use today, side by side, in the
//! same run. Run it with `bench/run.sh` (or `cargo bench --bench e2e`); see BENCHMARKS.md for the method.
//!
//! Everything is on loopback: a private adb server (the real `adb` binary) on an ephemeral port, simulated phones
//! (`xagent_adb_connector::sim`, speaking the real ADB transport protocol) served by a tokio runtime in this
//! process, and the connector as the real release binary. Baselines run against the very same adb server and
//! phones, interleaved sample by sample with the connector so that machine drift hits both sides alike.
//!
//! Every figure is reported as absolute p50/p95 plus a ratio `connector / baseline` of costs (latency, or
//! 1/throughput), so lower is better everywhere and ≤ 1 means the connector is at least as fast.
//!
//! Environment: `BENCH_SCALE_PHONES` (default 64), `BENCH_SCALE_SECS` (default 60), `BENCH_HANG_CALLS` (500),
//! `BENCH_QUICK=1` (fewer
//! samples; smoke run), `BENCH_OUT` (results path, default `bench/results.json`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adb_client::server_device::ADBServerDevice;
use adb_client::ADBDeviceExt;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use xagent_adb_connector::device::adb::AdbBackend;
use xagent_adb_connector::device::DeviceKey;
use xagent_adb_connector::sim::{SimConfig, SimPhone};
use xagent_adb_connector::tools::screen::{self, capture, render, CapturePath, Format};

const BIN: &str = env!("CARGO_BIN_EXE_xagent-adb-connector");
const REQ_TIMEOUT: Duration = Duration::from_secs(60);
/// The connector's log filter for every measured run: warnings only, plus the one start-up line we parse.
const QUIET_LOG: &str = "warn,xagent_adb_connector::run=info";

// ---------------------------------------------------------------------------------------------------------------
// Statistics

#[derive(Clone, Debug, Default)]
struct Stats {
    n: usize,
    p50: f64,
    p95: f64,
    mean: f64,
    min: f64,
    max: f64,
}

fn stats(samples: &[f64]) -> Stats {
    if samples.is_empty() {
        return Stats::default();
    }
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    Stats {
        n: v.len(),
        p50: pct(0.50),
        p95: pct(0.95),
        mean: v.iter().sum::<f64>() / v.len() as f64,
        min: v[0],
        max: v[v.len() - 1],
    }
}

impl Stats {
    fn json(&self) -> Value {
        let r = |x: f64| (x * 1000.0).round() / 1000.0;
        json!({"n": self.n, "p50": r(self.p50), "p95": r(self.p95), "mean": r(self.mean), "min": r(self.min), "max": r(self.max)})
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn quick() -> bool {
    std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1")
}

// ---------------------------------------------------------------------------------------------------------------
// /proc helpers

fn proc_status_kb(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find_map(|l| l.strip_prefix(field)?.trim().trim_end_matches("kB").trim().parse().ok())
}

/// utime + stime of a process, in ms (clock ticks assumed 100 Hz, as on every Linux build we target).
fn proc_cpu_ms(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ")": state is field 3, utime 14, stime 15 → indices 11, 12.
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) * 10.0
}

/// CPU (user + system) of this process's waited-for children, in ms.
fn children_cpu_ms() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (t(13) + t(14)) * 10.0
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("ephemeral port")
}

// ---------------------------------------------------------------------------------------------------------------
// A private adb server (the real binary), never the default port

struct Adb {
    port: u16,
    home: tempfile::TempDir,
    seq: AtomicU64,
}

impl Adb {
    fn start() -> Adb {
        let adb = Adb { port: free_port(), home: tempfile::tempdir().unwrap(), seq: AtomicU64::new(0) };
        let st = adb.cmd(&["start-server"]).stdout(Stdio::null()).stderr(Stdio::null()).status().expect("run adb");
        assert!(st.success(), "adb start-server failed (is `adb` installed? apt-get install -y adb)");
        adb
    }

    fn addr(&self) -> SocketAddrV4 {
        SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, self.port)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("adb");
        c.arg("-P")
            .arg(self.port.to_string())
            .args(args)
            .env("HOME", self.home.path())
            .env("TMPDIR", self.home.path())
            .env_remove("ANDROID_SERIAL")
            .env_remove("ANDROID_SDK_HOME")
            .env_remove("ANDROID_USER_HOME")
            .env_remove("ADB_VENDOR_KEYS")
            .stdin(Stdio::null());
        c
    }

    /// Runs `adb -P PORT ARGS`, stdout to `out` (or discarded); true on exit 0.
    fn run(&self, args: &[&str], out: Option<&Path>) -> bool {
        let mut c = self.cmd(args);
        match out {
            Some(p) => c.stdout(std::fs::File::create(p).unwrap()),
            None => c.stdout(Stdio::null()),
        };
        c.stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
    }

    fn text(&self, args: &[&str]) -> String {
        let out = self.cmd(args).stderr(Stdio::null()).output().expect("run adb");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn tmp(&self, name: &str) -> PathBuf {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        self.home.path().join(format!("{n}-{name}"))
    }

    /// `adb connect` every serial and waits until all are in state `device`.
    fn connect_all(&self, serials: &[String]) {
        for s in serials {
            let t = self.text(&["connect", s]);
            assert!(t.contains("connected to"), "adb connect {s}: {t}");
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let list = self.text(&["devices"]);
            let ready = serials
                .iter()
                .filter(|s| list.lines().any(|l| l.split_once('\t').is_some_and(|(a, b)| a == *s && b == "device")))
                .count();
            if ready == serials.len() {
                return;
            }
            assert!(Instant::now() < deadline, "only {ready}/{} devices came online:\n{list}", serials.len());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// PID of the forked server daemon (`adb -L tcp:PORT fork-server …`).
    fn server_pid(&self) -> Option<u32> {
        let needle = format!("tcp:{}", self.port);
        std::fs::read_dir("/proc").ok()?.filter_map(Result::ok).find_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let c = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (c.contains("fork-server") && c.contains(&needle)).then_some(pid)
        })
    }
}

impl Drop for Adb {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The connector binary

struct Connector {
    child: Child,
    addr: SocketAddr,
    logs: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl Connector {
    fn start(adb_port: u16, rust_log: &str) -> Connector {
        Self::start_with(adb_port, rust_log, &[])
    }

    fn start_with(adb_port: u16, rust_log: &str, extra: &[&str]) -> Connector {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .args(["--log-format", "json", "serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .args(["--adb-server", &format!("127.0.0.1:{adb_port}")])
            .args(extra)
            .env_remove("XAGENT_CONNECTOR_API_KEY")
            .env("RUST_LOG", rust_log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the connector");
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
                            let _ = tx.send(v["addr"].as_str().unwrap_or_default().to_owned());
                            sent = true;
                        }
                    }
                }
                sink.lock().unwrap().push(line);
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(a) => a.parse().expect("listening address"),
            Err(_) => {
                let _ = child.kill();
                panic!("the connector did not start: {:#?}", logs.lock().unwrap());
            }
        };
        Connector { child, addr, logs, _dir: dir }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn warnings(&self) -> Vec<String> {
        self.logs
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains("\"WARN\"") || l.contains("\"ERROR\""))
            .cloned()
            .collect()
    }
}

impl Drop for Connector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------------------------
// A pipelined protocol client: any number of requests in flight on one socket, replies routed by request_id

struct Ws {
    out: mpsc::UnboundedSender<Message>,
    pending: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>,
    seq: AtomicU64,
    tag: String,
}

impl Ws {
    async fn connect(addr: SocketAddr, tag: &str) -> Arc<Ws> {
        let mut req = format!("ws://{addr}/ws").into_client_request().unwrap();
        req.headers_mut().insert("Sec-WebSocket-Protocol", "xagent.connector.packet.v1".parse().unwrap());
        let (ws, _) = tokio_tungstenite::connect_async_with_config(req, None, true).await.expect("ws connect");
        let (mut sink, mut stream) = ws.split();
        let (tx, mut rx) = mpsc::unbounded_channel::<Message>();
        tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if sink.send(m).await.is_err() {
                    break;
                }
            }
        });
        let pending: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>> = Default::default();
        let p = pending.clone();
        tokio::spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                if let Message::Text(t) = msg {
                    let Ok(v) = serde_json::from_str::<Value>(t.as_str()) else { continue };
                    if let Some(rid) = v["request_id"].as_str() {
                        if let Some(tx) = p.lock().unwrap().remove(rid) {
                            let _ = tx.send(v);
                        }
                    }
                }
            }
            p.lock().unwrap().clear(); // wake every waiter: the socket is gone
        });
        Arc::new(Ws { out: tx, pending, seq: AtomicU64::new(0), tag: tag.to_owned() })
    }

    async fn request(&self, kind: &str, channel: Option<&str>, payload: Value) -> Result<Value, String> {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let (pid, rid) = (format!("pkt_{}_{n}", self.tag), format!("req_{}_{n}", self.tag));
        let mut p = json!({"schema": "xagent.connector.packet/v1", "packet_id": pid, "request_id": rid,
                           "type": kind, "time": 1_790_000_000_000u64, "payload": payload});
        if let Some(c) = channel {
            p["connector_channel_id"] = json!(c);
        }
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(rid.clone(), tx);
        self.out.send(Message::text(p.to_string())).map_err(|_| "socket closed".to_string())?;
        match tokio::time::timeout(REQ_TIMEOUT, rx).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(_)) => Err("socket closed".into()),
            Err(_) => {
                self.pending.lock().unwrap().remove(&rid);
                Err(format!("{kind}: no reply within {REQ_TIMEOUT:?}"))
            }
        }
    }

    async fn hello(&self) {
        let p = json!({"connector_card_id": "device.adb", "protocol_version": "3.0",
                       "supported_profiles": ["xagent.device.v1"]});
        let ack = self.request("connector.hello", None, p).await.unwrap();
        assert_eq!(ack["type"], "connector.hello.ack", "{ack}");
    }

    async fn open(&self) -> String {
        let ack = self.request("channel.open", None, json!({})).await.unwrap();
        assert_eq!(ack["type"], "channel.open.ack", "{ack}");
        ack["connector_channel_id"].as_str().unwrap().to_owned()
    }

    /// Binds any free online phone to `ch` (pool semantics), retrying while devices are still being verified.
    async fn bind(&self, ch: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let a = self.request("auth.start", Some(ch), json!({"flow_id": "adb_device"})).await.unwrap();
            if a["payload"]["status"] == "authenticated" {
                return;
            }
            assert!(Instant::now() < deadline, "channel never bound: {a}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `tool.invoke`; the result, or the error as text.
    async fn invoke(&self, ch: &str, tool: &str, mut args: Value) -> Result<Value, String> {
        args["connector_channel_id"] = json!(ch);
        let ack = self.request("tool.invoke", Some(ch), json!({"tool_id": tool, "arguments": args})).await?;
        if ack["type"] != "tool.invoke.ack" || ack.get("error").is_some_and(|e| !e.is_null()) {
            return Err(format!("{tool}: {ack}"));
        }
        Ok(ack["payload"]["result"].clone())
    }
}

/// GET over a fresh connection (as a download client does); returns (status, body bytes, time to first byte).
async fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, usize, Duration), String> {
    let t = Instant::now();
    let mut s = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let _ = s.set_nodelay(true);
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::with_capacity(256 * 1024);
    let mut buf = vec![0u8; 64 * 1024];
    let mut ttfb = None;
    loop {
        let n = s.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        ttfb.get_or_insert_with(|| t.elapsed());
        raw.extend_from_slice(&buf[..n]);
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no header end")?;
    let status = std::str::from_utf8(&raw[..split])
        .ok()
        .and_then(|h| h.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("bad status line")?;
    Ok((status, raw.len() - split - 4, ttfb.unwrap_or_default()))
}

/// `android_screenshot` then the download: (total, tool ack, download, image bytes).
async fn screenshot(ws: &Ws, addr: SocketAddr, ch: &str) -> Result<(Duration, Duration, Duration, usize), String> {
    let t = Instant::now();
    let r = ws.invoke(ch, "android_screenshot", json!({})).await?;
    let acked = t.elapsed();
    let url = r["files"][0]["download_url"].as_str().ok_or("no download_url")?.to_owned();
    let (status, bytes, _) = http_get(addr, &url).await?;
    if status != 200 {
        return Err(format!("download answered {status}"));
    }
    let total = t.elapsed();
    Ok((total, acked, total - acked, bytes))
}

// ---------------------------------------------------------------------------------------------------------------
// Baselines that are not the adb CLI

const MARKER: &str = "__XAGENT_EXIT__";

/// What the connector's device layer does for a tap, issued directly in-process through `adb_client`.
fn adb_client_shell(server: SocketAddrV4, serial: &str, cmd: &str) -> Result<(), String> {
    let mut dev = ADBServerDevice::new(serial.to_owned(), Some(server));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let full = format!("{cmd}; echo {MARKER}$?");
    dev.shell_command(&full, Some(&mut out), Some(&mut err)).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out);
    text.contains(&format!("{MARKER}0")).then_some(()).ok_or_else(|| format!("no exit marker: {text}"))
}

fn adb_request(s: &mut TcpStream, req: &str) -> Result<(), String> {
    s.write_all(format!("{:04x}{req}", req.len()).as_bytes()).map_err(|e| e.to_string())?;
    let mut st = [0u8; 4];
    s.read_exact(&mut st).map_err(|e| e.to_string())?;
    (&st == b"OKAY").then_some(()).ok_or_else(|| format!("{req}: {}", String::from_utf8_lossy(&st)))
}

/// The floor: one TCP connection, `host:transport:SERIAL` then `shell,v2,raw:CMD` (2 round trips), no feature
/// query. What an ADB client that caches the device's features and reuses nothing else could do.
fn raw_shell(server: SocketAddrV4, serial: &str, cmd: &str) -> Result<(), String> {
    let mut s = TcpStream::connect(server).map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    adb_request(&mut s, &format!("host:transport:{serial}"))?;
    adb_request(&mut s, &format!("shell,v2,raw:{cmd}; echo {MARKER}$?"))?;
    let mut out = Vec::new();
    loop {
        let mut h = [0u8; 5];
        s.read_exact(&mut h).map_err(|e| e.to_string())?;
        let len = u32::from_le_bytes([h[1], h[2], h[3], h[4]]) as usize;
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).map_err(|e| e.to_string())?;
        match h[0] {
            1 => out.extend_from_slice(&body),
            3 => break,
            _ => {}
        }
    }
    let text = String::from_utf8_lossy(&out);
    text.contains(&format!("{MARKER}0")).then_some(()).ok_or_else(|| format!("no exit marker: {text}"))
}

// ---------------------------------------------------------------------------------------------------------------
// The report

struct Report {
    rows: Vec<Row>,
    json: serde_json::Map<String, Value>,
}

struct Row {
    scenario: String,
    connector: String,
    baseline: String,
    ratio: String,
    target: String,
    met: Option<bool>,
}

impl Report {
    fn row(
        &mut self,
        scenario: &str,
        connector: String,
        baseline: String,
        ratio: String,
        target: &str,
        met: Option<bool>,
    ) {
        self.rows.push(Row { scenario: scenario.into(), connector, baseline, ratio, target: target.into(), met });
    }

    fn table(&self) -> String {
        let mut s = String::from(
            "| scenario | connector p50 / p95 | baseline p50 / p95 | ratio p50 (p95) | target | met |\n|---|---|---|---|---|---|\n",
        );
        for r in &self.rows {
            let met = match r.met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "–",
            };
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                r.scenario, r.connector, r.baseline, r.ratio, r.target, met
            ));
        }
        s
    }
}

fn pp(s: &Stats) -> String {
    format!("{:.2} / {:.2} ms", s.p50, s.p95)
}

fn ratio(a: &Stats, b: &Stats) -> (f64, f64) {
    (a.p50 / b.p50, a.p95 / b.p95)
}

fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned()))
        .unwrap_or_else(|| "unknown".into());
    let mem_kb = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:")?.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    let first = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_owned).collect::<Vec<_>>().join(" / "))
            .unwrap_or_default()
    };
    json!({
        "nproc": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu": model,
        "mem_gib": round3(mem_kb as f64 / 1024.0 / 1024.0),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        "adb": first("adb", &["version"]),
        "rustc": first("rustc", &["-V"]),
        "git": first("git", &["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short", "HEAD"]),
        "connector_binary": BIN,
        "loadavg_at_start": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    })
}

// ---------------------------------------------------------------------------------------------------------------
// Scenarios 1–4: one phone, interleaved A/B

struct OnePhone {
    adb: Adb,
    serial: String,
    conn: Connector,
    ws: Arc<Ws>,
    ch: String,
}

fn one_phone(sim_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, sims: &mut Vec<SimPhone>) -> OnePhone {
    let adb = Adb::start();
    let sim = sim_rt.block_on(SimPhone::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())).unwrap();
    let serial = sim.serial();
    sims.push(sim);
    adb.connect_all(std::slice::from_ref(&serial));
    let conn = Connector::start(adb.port, QUIET_LOG);
    let (ws, ch) = rt.block_on(async {
        let ws = Ws::connect(conn.addr, "one").await;
        ws.hello().await;
        let ch = ws.open().await;
        ws.bind(&ch).await;
        (ws, ch)
    });
    OnePhone { adb, serial, conn, ws, ch }
}

fn bench_tap(rt: &tokio::runtime::Runtime, p: &OnePhone, n: usize, rep: &mut Report) {
    let (x, y) = (100, 300); // an empty spot: no app switch, the counter is untouched
    let tap_cmd = format!("input tap {x} {y}");
    let (xs, ys) = (x.to_string(), y.to_string());
    let cli_args = ["-s", p.serial.as_str(), "shell", "input", "tap", xs.as_str(), ys.as_str()];
    let ws_tap = || {
        rt.block_on(async {
            let t = Instant::now();
            p.ws.invoke(&p.ch, "android_tap", json!({"x": x, "y": y})).await.expect("tap");
            t.elapsed()
        })
    };
    let cli_tap = || {
        let t = Instant::now();
        assert!(p.adb.run(&cli_args, None), "adb shell input tap failed");
        t.elapsed()
    };
    let direct_tap = || {
        let t = Instant::now();
        adb_client_shell(p.adb.addr(), &p.serial, &tap_cmd).expect("adb_client tap");
        t.elapsed()
    };
    let raw_tap = || {
        let t = Instant::now();
        raw_shell(p.adb.addr(), &p.serial, &tap_cmd).expect("raw tap");
        t.elapsed()
    };
    for _ in 0..10 {
        ws_tap();
        cli_tap();
        direct_tap();
        raw_tap();
    }
    let (mut a, mut b, mut c, mut d) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut cpu_conn, mut cpu_cli) = (0.0, 0.0);
    let pid = p.conn.pid();
    for i in 0..n {
        // Rotate the order so no side always runs right after another.
        for k in 0..4 {
            match (i + k) % 4 {
                0 => {
                    let c0 = proc_cpu_ms(pid);
                    a.push(ms(ws_tap()));
                    cpu_conn += proc_cpu_ms(pid) - c0;
                }
                1 => {
                    let c0 = children_cpu_ms();
                    b.push(ms(cli_tap()));
                    cpu_cli += children_cpu_ms() - c0;
                }
                2 => c.push(ms(direct_tap())),
                _ => d.push(ms(raw_tap())),
            }
        }
    }
    let (sa, sb, sc, sd) = (stats(&a), stats(&b), stats(&c), stats(&d));
    let (r50, r95) = ratio(&sa, &sb);
    rep.row(
        "1 tap: `android_tap` ack vs `adb shell input tap`",
        pp(&sa),
        pp(&sb),
        format!("{r50:.3} ({r95:.3})"),
        "≤ 0.5",
        Some(r50 <= 0.5),
    );
    let over50 = sa.p50 - sc.p50;
    let over95 = sa.p95 - sc.p95;
    rep.row(
        "2 connector overhead: tap − same op via in-process `adb_client`",
        format!("{over50:.2} / {over95:.2} ms"),
        format!("adb_client {}", pp(&sc)),
        format!("{:.3} ({:.3})", sa.p50 / sc.p50, sa.p95 / sc.p95),
        "≤ 1 ms p50",
        Some(over50 <= 1.0),
    );
    rep.row(
        "2b floor: one-connection raw ADB shell (no feature query)",
        format!("tap {}", pp(&sa)),
        format!("raw {}", pp(&sd)),
        format!("{:.3} ({:.3})", sa.p50 / sd.p50, sa.p95 / sd.p95),
        "info",
        None,
    );
    let cpu_a = cpu_conn / n as f64;
    let cpu_b = cpu_cli / n as f64;
    rep.row(
        "1b CPU per tap: connector process vs adb CLI process",
        format!("{cpu_a:.2} ms"),
        format!("{cpu_b:.2} ms"),
        format!("{:.3}", cpu_a / cpu_b),
        "info",
        None,
    );
    rep.json.insert(
        "tap".into(),
        json!({"connector": sa.json(), "adb_cli": sb.json(), "adb_client_direct": sc.json(), "raw_adb_floor": sd.json(),
               "ratio_p50": round3(r50), "ratio_p95": round3(r95), "target_ratio": 0.5, "met": r50 <= 0.5,
               "overhead_ms_p50": round3(over50), "overhead_ms_p95": round3(over95), "overhead_target_ms": 1.0,
               "overhead_met": over50 <= 1.0,
               "cpu_ms_per_tap": {"connector": round3(cpu_a), "adb_cli": round3(cpu_b)}}),
    );
}

/// Issue 18: what screen-state and rotation awareness cost per action. Same phone, same adb server, interleaved:
/// the connector as shipped (input tools read the screen state first: one round trip, cached ≤ 1 s, forgotten by
/// each side effect) vs a second connector whose policy turns `screen_checks` off; each taps at a point valid in
/// both orientations (no rotation query) and at one valid only in portrait (the rotation is asked). The phone's
/// own command log counts the state queries per tap.
fn bench_states(rt: &tokio::runtime::Runtime, p: &OnePhone, sim: &SimPhone, n: usize, rep: &mut Report) {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, r#"{"screen_checks": false}"#).unwrap();
    let off = Connector::start_with(p.adb.port, QUIET_LOG, &["--policy", policy.to_str().unwrap()]);
    let (ws_off, ch_off) = rt.block_on(async {
        let ws = Ws::connect(off.addr, "states-off").await;
        ws.hello().await;
        let ch = ws.open().await;
        ws.bind(&ch).await;
        (ws, ch)
    });
    let tap = |ws: &Ws, ch: &str, y: i64| {
        rt.block_on(async {
            let t = Instant::now();
            ws.invoke(ch, "android_tap", json!({"x": 100, "y": y})).await.expect("tap");
            t.elapsed()
        })
    };
    let queries = || sim.commands().iter().filter(|c| c.starts_with("dumpsys power")).count();
    for _ in 0..10 {
        tap(&p.ws, &p.ch, 300);
        tap(&ws_off, &ch_off, 300);
    }
    // (checks on, y=300), (off, 300), (on, 1500), (off, 1500)
    let mut v: [Vec<f64>; 4] = Default::default();
    let mut q_on = 0;
    for i in 0..n {
        for k in 0..4 {
            let side = (i + k) % 4;
            let y = if side < 2 { 300 } else { 1500 };
            if side % 2 == 0 {
                let q0 = queries();
                v[side].push(ms(tap(&p.ws, &p.ch, y)));
                q_on += queries() - q0;
            } else {
                v[side].push(ms(tap(&ws_off, &ch_off, y)));
            }
        }
    }
    let s: Vec<Stats> = v.iter().map(|x| stats(x)).collect();
    let per_tap = q_on as f64 / (2 * n) as f64;
    let extra50 = s[0].p50 - s[1].p50;
    rep.row(
        "9 screen-state awareness: tap with the state query vs `screen_checks: false`",
        pp(&s[0]),
        pp(&s[1]),
        format!("{:.3} ({:.3})", s[0].p50 / s[1].p50, s[0].p95 / s[1].p95),
        "≤ 1 extra round trip",
        Some(per_tap <= 1.0),
    );
    rep.row(
        "9b rotation awareness: tap at (100, 1500) (rotation asked) vs (100, 300), checks on / off",
        format!("on {} / off {}", pp(&s[2]), pp(&s[3])),
        format!("on {} / off {}", pp(&s[0]), pp(&s[1])),
        format!("{:.3} ({:.3})", s[2].p50 / s[0].p50, s[2].p95 / s[0].p95),
        "info",
        None,
    );
    rep.json.insert(
        "states".into(),
        json!({"tap_checks_on": s[0].json(), "tap_checks_off": s[1].json(),
               "tap_rotation_checks_on": s[2].json(), "tap_rotation_checks_off": s[3].json(),
               "state_queries_per_tap": round3(per_tap), "extra_ms_p50": round3(extra50),
               "extra_ms_p95": round3(s[0].p95 - s[1].p95), "target_extra_round_trips": 1, "met": per_tap <= 1.0}),
    );
}

fn bench_screenshot(rt: &tokio::runtime::Runtime, p: &OnePhone, n: usize, rep: &mut Report) {
    let out = p.adb.tmp("screen.png");
    let cli_args = ["-s", p.serial.as_str(), "exec-out", "screencap", "-p"];
    let ws_shot = || rt.block_on(screenshot(&p.ws, p.conn.addr, &p.ch)).expect("screenshot");
    let cli_shot = || {
        let t = Instant::now();
        assert!(p.adb.run(&cli_args, Some(&out)), "adb exec-out screencap -p failed");
        (t.elapsed(), std::fs::metadata(&out).map(|m| m.len() as usize).unwrap_or(0))
    };
    for _ in 0..3 {
        ws_shot();
        cli_shot();
    }
    let (mut a, mut b, mut ack, mut dl) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut jpeg, mut png) = (0, 0);
    for i in 0..n {
        for k in 0..2 {
            if (i + k) % 2 == 0 {
                let (t, t_ack, t_dl, bytes) = ws_shot();
                a.push(ms(t));
                ack.push(ms(t_ack));
                dl.push(ms(t_dl));
                jpeg = bytes;
            } else {
                let (t, bytes) = cli_shot();
                b.push(ms(t));
                png = bytes;
            }
        }
    }
    let (sa, sb) = (stats(&a), stats(&b));
    let (r50, r95) = ratio(&sa, &sb);
    rep.row(
        "3 screenshot: `android_screenshot` + download vs `adb exec-out screencap -p > f`",
        format!("{} ({} B JPEG 576×1280)", pp(&sa), jpeg),
        format!("{} ({} B PNG 1080×2400)", pp(&sb), png),
        format!("{r50:.3} ({r95:.3})"),
        "≤ 1.0",
        Some(r50 <= 1.0),
    );
    rep.json.insert(
        "screenshot".into(),
        json!({"connector": sa.json(), "connector_tool_ack": stats(&ack).json(), "connector_download": stats(&dl).json(),
               "adb_cli": sb.json(), "connector_image_bytes": jpeg, "adb_cli_image_bytes": png,
               "ratio_p50": round3(r50), "ratio_p95": round3(r95), "target_ratio": 1.0, "met": r50 <= 1.0}),
    );
}

/// Issue 24: screenshots over USB. One simulated phone paying a phone's costs (`PhoneCosts::usb2`: 100 ms display
/// read, 150 ms/MP PNG, a 35 MB/s link, gzip -1 at 60 MB/s); the connector as built (compressed capture), the same
/// binary with `--capture-compression off` (the framebuffer path before issue 24) and `adb exec-out
/// screencap -p`, interleaved in one run. Per frame: time to the downloaded JPEG, bytes over the link (counted by
/// the phone) and the connector's CPU.
fn bench_screenshot_usb(sim_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, n: usize, rep: &mut Report) {
    use xagent_adb_connector::sim::PhoneCosts;
    let adb = Adb::start();
    // BENCH_USB_GZIP_MBPS: the phone's gzip -1 throughput (default 60 MB/s; see BENCHMARKS.md for the sensitivity).
    let gzip_mbps = env_usize("BENCH_USB_GZIP_MBPS", 60) as u64;
    let costs = PhoneCosts { gzip_bytes_per_s: gzip_mbps * 1_000_000, ..PhoneCosts::usb2() };
    let cfg = SimConfig { costs, ..SimConfig::default() };
    let sim = sim_rt.block_on(SimPhone::start("127.0.0.1:0".parse().unwrap(), cfg)).unwrap();
    let serial = sim.serial();
    adb.connect_all(std::slice::from_ref(&serial));
    let after = Connector::start(adb.port, QUIET_LOG);
    let before = Connector::start_with(adb.port, QUIET_LOG, &["--capture-compression", "off"]);
    let bind = |c: &Connector, tag: &str| {
        rt.block_on(async {
            let ws = Ws::connect(c.addr, tag).await;
            ws.hello().await;
            let ch = ws.open().await;
            ws.bind(&ch).await;
            (ws, ch)
        })
    };
    let (ws_a, ch_a) = bind(&after, "usb-after");
    let (ws_b, ch_b) = bind(&before, "usb-before");
    let out = adb.tmp("screen-usb.png");
    let cli_args = ["-s", serial.as_str(), "exec-out", "screencap", "-p"];
    // (time, bytes over the link, image bytes)
    let shot = |ws: &Ws, addr: SocketAddr, ch: &str| {
        let sent = sim.bytes_sent();
        let (t, _, _, bytes) = rt.block_on(screenshot(ws, addr, ch)).expect("screenshot");
        (t, sim.bytes_sent() - sent, bytes)
    };
    let cli = || {
        let sent = sim.bytes_sent();
        let t = Instant::now();
        assert!(adb.run(&cli_args, Some(&out)), "adb exec-out screencap -p failed");
        (t.elapsed(), sim.bytes_sent() - sent, std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0) as usize)
    };
    for _ in 0..2 {
        shot(&ws_a, after.addr, &ch_a);
        shot(&ws_b, before.addr, &ch_b);
        cli();
    }
    let (mut ta, mut tb, mut tc) = (Vec::new(), Vec::new(), Vec::new());
    let (mut la, mut lb, mut lc) = (0u64, 0u64, 0u64);
    let (mut cpu_a, mut cpu_b) = (0.0, 0.0);
    let (mut jpeg, mut png) = (0, 0);
    for i in 0..n {
        for k in 0..3 {
            match (i + k) % 3 {
                0 => {
                    let c0 = proc_cpu_ms(after.pid());
                    let (t, l, b) = shot(&ws_a, after.addr, &ch_a);
                    cpu_a += proc_cpu_ms(after.pid()) - c0;
                    ta.push(ms(t));
                    la += l;
                    jpeg = b;
                }
                1 => {
                    let c0 = proc_cpu_ms(before.pid());
                    let (t, l, _) = shot(&ws_b, before.addr, &ch_b);
                    cpu_b += proc_cpu_ms(before.pid()) - c0;
                    tb.push(ms(t));
                    lb += l;
                }
                _ => {
                    let (t, l, b) = cli();
                    tc.push(ms(t));
                    lc += l;
                    png = b;
                }
            }
        }
    }
    // This machine's GNU `gzip -1` on the same raw frame: the yardstick for the phone's figure.
    let raw = adb.tmp("screen-usb.raw");
    assert!(adb.run(&["-s", serial.as_str(), "exec-out", "screencap"], Some(&raw)), "adb exec-out screencap failed");
    let raw_len = std::fs::metadata(&raw).map(|m| m.len()).unwrap_or(0);
    let mut gz = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let ok = Command::new("gzip").args(["-1", "-c"]).arg(&raw).stdout(Stdio::null()).status();
        if ok.is_ok_and(|s| s.success()) {
            gz.push(raw_len as f64 / 1e6 / t.elapsed().as_secs_f64());
        }
    }
    let host_gzip = stats(&gz).p50;
    let nn = n.max(1) as f64;
    let (sa, sb, sc) = (stats(&ta), stats(&tb), stats(&tc));
    let (r50, r95) = ratio(&sa, &sc);
    let (rb50, _) = ratio(&sb, &sc);
    let (cpu_a, cpu_b) = (cpu_a / nn, cpu_b / nn);
    let per = |l: u64| (l as f64 / nn).round() as u64;
    rep.row(
        "3u screenshot over USB (phone costs on): `android_screenshot` + download vs `adb exec-out screencap -p`",
        format!("{} ({} B over the link, {cpu_a:.1} ms connector CPU per frame)", pp(&sa), per(la)),
        format!("{} ({} B over the link)", pp(&sc), per(lc)),
        format!("{r50:.3} ({r95:.3}); before: {rb50:.3}; phone gzip {gzip_mbps} MB/s"),
        "≤ 0.5, CPU ≤ 15 ms",
        Some(r50 <= 0.5 && cpu_a <= 15.0),
    );
    rep.json.insert(
        "screenshot_usb".into(),
        json!({"phone_costs": {"display_read_ms": 100, "png_ms_per_megapixel": 150, "link_bytes_per_s": 35_000_000,
                               "gzip_bytes_per_s": gzip_mbps * 1_000_000},
               "host_gnu_gzip_1_mb_per_s_same_frame": round3(host_gzip),
               "connector": sa.json(), "connector_link_bytes_per_frame": per(la), "connector_cpu_ms_per_frame": round3(cpu_a),
               "connector_uncompressed": sb.json(), "connector_uncompressed_link_bytes_per_frame": per(lb),
               "connector_uncompressed_cpu_ms_per_frame": round3(cpu_b),
               "adb_cli": sc.json(), "adb_cli_link_bytes_per_frame": per(lc),
               "connector_image_bytes": jpeg, "adb_cli_image_bytes": png,
               "ratio_p50": round3(r50), "ratio_p95": round3(r95), "ratio_uncompressed_p50": round3(rb50),
               "target_ratio": 0.5, "target_cpu_ms": 15.0, "met": r50 <= 0.5 && cpu_a <= 15.0}),
    );
    for (name, c) in [("compressed", &after), ("uncompressed", &before)] {
        let w = c.warnings();
        if !w.is_empty() {
            println!("connector ({name}) warnings: {w:#?}");
        }
    }
    drop((ws_a, ws_b));
    sim_rt.block_on(sim.shutdown());
}

fn bench_ui_dump(rt: &tokio::runtime::Runtime, p: &OnePhone, n: usize, rep: &mut Report) {
    let local = p.adb.tmp("window_dump.xml");
    let local_s = local.to_string_lossy().into_owned();
    let ws_dump = || {
        rt.block_on(async {
            let t = Instant::now();
            let r = p.ws.invoke(&p.ch, "android_ui_dump", json!({})).await.expect("ui dump");
            (t.elapsed(), r["count"].as_u64().unwrap_or(0) as usize)
        })
    };
    let cli_dump = || {
        let t = Instant::now();
        assert!(p.adb.run(&["-s", &p.serial, "shell", "uiautomator", "dump"], None), "uiautomator dump failed");
        assert!(p.adb.run(&["-s", &p.serial, "pull", "/sdcard/window_dump.xml", &local_s], None), "adb pull failed");
        let xml = std::fs::read_to_string(&local).unwrap_or_default();
        let nodes = xml.matches("<node").count();
        (t.elapsed(), nodes)
    };
    for _ in 0..3 {
        ws_dump();
        cli_dump();
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut elements, mut nodes) = (0, 0);
    for i in 0..n {
        for k in 0..2 {
            if (i + k) % 2 == 0 {
                let (t, c) = ws_dump();
                a.push(ms(t));
                elements = c;
            } else {
                let (t, c) = cli_dump();
                b.push(ms(t));
                nodes = c;
            }
        }
    }
    let (sa, sb) = (stats(&a), stats(&b));
    let (r50, r95) = ratio(&sa, &sb);
    rep.row(
        "4 UI dump: `android_ui_dump` vs `uiautomator dump` + `adb pull` + count `<node`",
        format!("{} ({elements} elements)", pp(&sa)),
        format!("{} ({nodes} nodes)", pp(&sb)),
        format!("{r50:.3} ({r95:.3})"),
        "info (≤ 1 expected)",
        None,
    );
    rep.json.insert(
        "ui_dump".into(),
        json!({"connector": sa.json(), "adb_cli": sb.json(), "connector_elements": elements, "adb_cli_nodes": nodes,
               "ratio_p50": round3(r50), "ratio_p95": round3(r95)}),
    );
}

/// Where the time of a screenshot and a tap goes: connector-side tool time from its own "tool ok" log lines
/// (a separate connector with RUST_LOG=info), and the in-process pieces (capture, render) called directly.
fn bench_breakdown(
    sim_rt: &tokio::runtime::Runtime,
    rt: &tokio::runtime::Runtime,
    p: &OnePhone,
    n: usize,
    rep: &mut Report,
) {
    let conn = Connector::start(p.adb.port, "warn,xagent_adb_connector=info");
    // Take the phone over from the measuring connector for this pass: a second connector, its own binding.
    let (ws, ch) = rt.block_on(async {
        let ws = Ws::connect(conn.addr, "prof").await;
        ws.hello().await;
        let ch = ws.open().await;
        ws.bind(&ch).await;
        (ws, ch)
    });
    let (mut shot_total, mut shot_ack, mut shot_dl) = (Vec::new(), Vec::new(), Vec::new());
    let mut tap_total = Vec::new();
    rt.block_on(async {
        for _ in 0..3 {
            screenshot(&ws, conn.addr, &ch).await.unwrap();
            ws.invoke(&ch, "android_tap", json!({"x": 100, "y": 300})).await.unwrap();
        }
    });
    let skip = conn.logs.lock().unwrap().len();
    for _ in 0..n {
        let (t, a, d, _) = rt.block_on(screenshot(&ws, conn.addr, &ch)).unwrap();
        shot_total.push(ms(t));
        shot_ack.push(ms(a));
        shot_dl.push(ms(d));
        let t = Instant::now();
        rt.block_on(ws.invoke(&ch, "android_tap", json!({"x": 100, "y": 300}))).unwrap();
        tap_total.push(ms(t.elapsed()));
    }
    std::thread::sleep(Duration::from_millis(100));
    let (mut tool_shot, mut tool_tap) = (Vec::new(), Vec::new());
    for line in conn.logs.lock().unwrap()[skip..].iter() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if v["message"] != "tool ok" {
            continue;
        }
        let tool = v["span"]["tool"].as_str().unwrap_or("");
        let t = v["ms"].as_f64().unwrap_or(f64::NAN);
        match tool {
            "android_screenshot" => tool_shot.push(t),
            "android_tap" => tool_tap.push(t),
            _ => {}
        }
    }
    drop(ws);
    drop(conn);

    // In-process pieces of the screenshot: capture (framebuffer over adb) and render (resize + JPEG q80).
    let backend = AdbBackend::new(vec![p.adb.addr()]);
    let key = DeviceKey { server: p.adb.addr().to_string(), serial: p.serial.clone() };
    let (mut cap, mut cap_raw, mut resize_jpeg) = (Vec::new(), Vec::new(), Vec::new());
    let mut frame = None;
    for _ in 0..n.min(15) {
        let t = Instant::now();
        let c = sim_rt.block_on(capture(&backend, &key, CapturePath::Framebuffer, Duration::from_secs(30))).unwrap();
        cap.push(ms(t.elapsed()));
        let t = Instant::now();
        let _ = sim_rt.block_on(capture(&backend, &key, CapturePath::Raw, Duration::from_secs(30))).unwrap();
        cap_raw.push(ms(t.elapsed()));
        frame = Some(c.image);
    }
    let frame = frame.unwrap();
    for _ in 0..n.min(15) {
        let img = frame.clone();
        let t = Instant::now();
        let _ = render(img, 1280, Format::Jpeg { quality: 80 }).unwrap();
        resize_jpeg.push(ms(t.elapsed()));
    }
    // The pieces of render(), and a candidate replacement (area-average downscale on the RGBA frame, then RGB).
    let rgba = {
        let c = sim_rt.block_on(capture(&backend, &key, CapturePath::Framebuffer, Duration::from_secs(30))).unwrap();
        let rgb = c.image;
        image::RgbaImage::from_fn(rgb.width(), rgb.height(), |x, y| {
            let p = rgb.get_pixel(x, y).0;
            image::Rgba([p[0], p[1], p[2], 255])
        })
    };
    let (nw, nh) = (576, 1280);
    let (mut to_rgb, mut tri, mut thumb, mut jpeg, mut candidate) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut tri_img, mut thumb_img) = (None, None);
    for _ in 0..n.min(15) {
        let t = Instant::now();
        let rgb = image::DynamicImage::ImageRgba8(rgba.clone()).into_rgb8();
        to_rgb.push(ms(t.elapsed()));
        let t = Instant::now();
        let small = image::imageops::resize(&rgb, nw, nh, image::imageops::FilterType::Triangle);
        tri.push(ms(t.elapsed()));
        let t = Instant::now();
        let th = image::imageops::thumbnail(&rgb, nw, nh);
        thumb.push(ms(t.elapsed()));
        let t = Instant::now();
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80).encode_image(&small).unwrap();
        jpeg.push(ms(t.elapsed()));
        let t = Instant::now();
        let small_rgba = image::imageops::thumbnail(&rgba, nw, nh);
        let small_rgb = image::DynamicImage::ImageRgba8(small_rgba).into_rgb8();
        let mut out2 = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out2, 80).encode_image(&small_rgb).unwrap();
        candidate.push(ms(t.elapsed()));
        tri_img = Some(small);
        thumb_img = Some(th);
    }
    // A hand-written fixed-point area average fused with RGBA → RGB: the floor for the downscale step.
    let (mut fused, mut fused_jpeg) = (Vec::new(), Vec::new());
    let mut fused_img = None;
    for _ in 0..n.min(15) {
        let t = Instant::now();
        let small = area_downscale_rgba_to_rgb(
            rgba.as_raw(),
            rgba.width() as usize,
            rgba.height() as usize,
            nw as usize,
            nh as usize,
        );
        fused.push(ms(t.elapsed()));
        let img = image::RgbImage::from_raw(nw, nh, small).unwrap();
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80).encode_image(&img).unwrap();
        fused_jpeg.push(ms(t.elapsed()));
        fused_img = Some(img);
    }
    let psnr_of = |a: &image::RgbImage, b: &image::RgbImage| {
        let mse: f64 =
            a.as_raw().iter().zip(b.as_raw()).map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2)).sum::<f64>()
                / a.as_raw().len() as f64;
        if mse == 0.0 {
            json!("identical")
        } else {
            json!(round3(10.0 * (255.0f64 * 255.0 / mse).log10()))
        }
    };
    let psnr_fused = psnr_of(tri_img.as_ref().unwrap(), fused_img.as_ref().unwrap());
    let psnr = {
        let (a, b) = (tri_img.unwrap(), thumb_img.unwrap());
        let mse: f64 =
            a.as_raw().iter().zip(b.as_raw()).map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2)).sum::<f64>()
                / a.as_raw().len() as f64;
        if mse == 0.0 {
            f64::INFINITY
        } else {
            10.0 * (255.0f64 * 255.0 / mse).log10()
        }
    };
    let frame_cpu = frame_cpu(&rgba, n.clamp(5, 15), rep);
    let js = |v: &[f64]| stats(v).json();
    let b = json!({
        "frame_cpu": frame_cpu,
        "render_rgba_to_rgb_full_frame": js(&to_rgb), "render_resize_triangle_rgb": js(&tri),
        "render_thumbnail_rgb": js(&thumb), "render_jpeg_encode_576x1280_q80": js(&jpeg),
        "candidate_thumbnail_rgba_then_rgb_then_jpeg": js(&candidate),
        "candidate_fused_area_downscale": js(&fused), "candidate_fused_area_downscale_then_jpeg": js(&fused_jpeg),
        "psnr_db_triangle_vs_fused_area": psnr_fused,
        "psnr_db_triangle_vs_thumbnail": if psnr.is_finite() { json!(round3(psnr)) } else { json!("identical") },
        "screenshot_client_total": js(&shot_total), "screenshot_client_tool_ack": js(&shot_ack),
        "screenshot_client_download": js(&shot_dl), "screenshot_connector_tool_ms": js(&tool_shot),
        "capture_framebuffer_in_process": js(&cap), "capture_raw_exec_in_process": js(&cap_raw),
        "render_resize_jpeg_in_process": js(&resize_jpeg),
        "tap_client_total": js(&tap_total), "tap_connector_tool_ms": js(&tool_tap),
        "note": "connector tool ms comes from its own `tool ok` log line (integer ms, RUST_LOG=info pass)",
    });
    println!("breakdown: {}", serde_json::to_string_pretty(&b).unwrap());
    rep.json.insert("breakdown".into(), b);
}

// ---------------------------------------------------------------------------------------------------------------
// Per-frame CPU (issue 14): one captured 1080×2400 frame to the 576×1280 JPEG q80 an agent downloads, today's
// pipeline (until issue 14: `image` JPEG encoder, horizontal-first downscale) against the current one, in the same
// run, on the same frame; output quality as PSNR of the decoded JPEGs.

/// The downscale as it was before issue 14 (kept here as the baseline the current code is measured against).
fn baseline_area_downscale(src: &image::RgbImage, nw: u32, nh: u32) -> image::RgbImage {
    /// For each output index: the first source index and the weights (sum = 4096) of the sources it covers.
    fn taps(n_in: u32, n_out: u32) -> Vec<(usize, Vec<u32>)> {
        let scale = f64::from(n_in) / f64::from(n_out);
        (0..n_out)
            .map(|o| {
                let (a, b) = (f64::from(o) * scale, f64::from(o + 1) * scale);
                let first = a.floor() as usize;
                let last = (b.ceil() as usize).min(n_in as usize);
                let cover: Vec<f64> = (first..last).map(|i| ((i + 1) as f64).min(b) - (i as f64).max(a)).collect();
                let total: f64 = cover.iter().sum();
                let mut w: Vec<u32> = cover.iter().map(|c| (c / total * 4096.0).round() as u32).collect();
                // Rounding must not change the total, or flat colours would drift.
                let sum: u32 = w.iter().sum();
                if let Some(m) = w.iter_mut().max() {
                    *m = (*m + 4096).saturating_sub(sum);
                }
                (first, w)
            })
            .collect()
    }
    let (w, h) = (src.width() as usize, src.height() as usize);
    let (nw_u, nh_u) = (nw.max(1) as usize, nh.max(1) as usize);
    let (tx, ty) = (taps(w as u32, nw_u as u32), taps(h as u32, nh_u as u32));
    let raw = src.as_raw();
    // Streams row by row: one horizontally reduced source row and one accumulator row at a time, so the working
    // memory is a few KiB instead of an intermediate image (source rows on an output-row boundary are reduced
    // twice, a few percent more work).
    let mut hrow = vec![0u32; nw_u * 3];
    let mut acc = vec![0u64; nw_u * 3];
    let mut out = vec![0u8; nw_u * nh_u * 3];
    for (oy, (first_y, wys)) in ty.iter().enumerate() {
        acc.iter_mut().for_each(|a| *a = 0);
        for (ky, wy) in wys.iter().enumerate() {
            let y = first_y + ky;
            let row = &raw[y * w * 3..(y + 1) * w * 3];
            for (ox, (first_x, wxs)) in tx.iter().enumerate() {
                let mut px = [0u32; 3];
                for (kx, wx) in wxs.iter().enumerate() {
                    let p = &row[(first_x + kx) * 3..(first_x + kx) * 3 + 3];
                    for c in 0..3 {
                        px[c] += u32::from(p[c]) * wx;
                    }
                }
                hrow[ox * 3..ox * 3 + 3].copy_from_slice(&px);
            }
            // 255 × 4096 × 4096 needs more than 32 bits: accumulate wide, round once.
            for (a, v) in acc.iter_mut().zip(&hrow) {
                *a += u64::from(*v) * u64::from(*wy);
            }
        }
        for (d, a) in out[oy * nw_u * 3..(oy + 1) * nw_u * 3].iter_mut().zip(&acc) {
            *d = ((a + (1 << 23)) >> 24).min(255) as u8;
        }
    }
    image::RgbImage::from_raw(nw_u as u32, nh_u as u32, out).expect("buffer sized for nw × nh × 3")
}

/// Today's (pre-issue-14) render: RGBA → RGB, horizontal-first area downscale, `image`'s JPEG encoder.
fn baseline_frame(rgba: &image::RgbaImage) -> (Vec<u8>, [f64; 3]) {
    let t = Instant::now();
    let rgb = image::DynamicImage::ImageRgba8(rgba.clone()).into_rgb8();
    let t_rgb = ms(t.elapsed());
    let t = Instant::now();
    let small = baseline_area_downscale(&rgb, 576, 1280);
    let t_ds = ms(t.elapsed());
    let t = Instant::now();
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80).encode_image(&small).unwrap();
    (out, [t_rgb, t_ds, ms(t.elapsed())])
}

/// The current render path as `android_screenshot` runs it: RGBA → RGB (in `capture`), `screen::fit`,
/// `screen::encode`.
fn current_frame(rgba: &image::RgbaImage) -> (Vec<u8>, [f64; 3]) {
    let t = Instant::now();
    let rgb = image::DynamicImage::ImageRgba8(rgba.clone()).into_rgb8();
    let t_rgb = ms(t.elapsed());
    let t = Instant::now();
    let small = screen::fit(rgb, 1280);
    let t_ds = ms(t.elapsed());
    let t = Instant::now();
    let (out, _, _) = screen::encode(&small, Format::Jpeg { quality: 80 }).unwrap();
    (out, [t_rgb, t_ds, ms(t.elapsed())])
}

/// The conversion fused into the downscale (`area_downscale_raw` on the RGBA frame, 4 bytes per pixel): what a
/// capture that hands over RGBA would cost.
fn fused_frame(rgba: &image::RgbaImage) -> (Vec<u8>, [f64; 3]) {
    let t = Instant::now();
    let small = screen::area_downscale_raw(rgba.as_raw(), rgba.width() as usize, rgba.height() as usize, 4, 576, 1280);
    let t_ds = ms(t.elapsed());
    let t = Instant::now();
    let img = image::RgbImage::from_raw(576, 1280, small).unwrap();
    let (out, _, _) = screen::encode(&img, Format::Jpeg { quality: 80 }).unwrap();
    (out, [0.0, t_ds, ms(t.elapsed())])
}

fn psnr_jpeg(a: &[u8], b: &[u8]) -> f64 {
    let (a, b) = (image::load_from_memory(a).unwrap().into_rgb8(), image::load_from_memory(b).unwrap().into_rgb8());
    let mse: f64 = a.as_raw().iter().zip(b.as_raw()).map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2)).sum::<f64>()
        / a.as_raw().len() as f64;
    if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0f64 * 255.0 / mse).log10()
    }
}

fn frame_cpu(rgba: &image::RgbaImage, n: usize, rep: &mut Report) -> Value {
    type Pipeline = fn(&image::RgbaImage) -> (Vec<u8>, [f64; 3]);
    let pipes: [(&str, Pipeline); 3] =
        [("today", baseline_frame), ("current", current_frame), ("current_fused_rgba", fused_frame)];
    let mut samples: Vec<[Vec<f64>; 4]> = (0..3).map(|_| Default::default()).collect();
    let mut outputs: Vec<Vec<u8>> = vec![Vec::new(); 3];
    for _ in 0..2 {
        for (_, f) in &pipes {
            f(rgba); // warm-up
        }
    }
    // Interleaved, so drift of the shared machine hits every pipeline alike.
    for _ in 0..n {
        for (k, (_, f)) in pipes.iter().enumerate() {
            let (out, t) = f(rgba);
            for (i, v) in t.iter().enumerate() {
                samples[k][i].push(*v);
            }
            samples[k][3].push(t.iter().sum());
            outputs[k] = out;
        }
    }
    let mut v = serde_json::Map::new();
    for (k, (name, _)) in pipes.iter().enumerate() {
        v.insert(
            (*name).into(),
            json!({"rgba_to_rgb": stats(&samples[k][0]).json(), "downscale": stats(&samples[k][1]).json(),
                   "jpeg": stats(&samples[k][2]).json(), "total": stats(&samples[k][3]).json(),
                   "jpeg_bytes": outputs[k].len()}),
        );
    }
    let (today, cur, fused) = (stats(&samples[0][3]), stats(&samples[1][3]), stats(&samples[2][3]));
    let psnr = psnr_jpeg(&outputs[0], &outputs[1]);
    let psnr_fused = psnr_jpeg(&outputs[0], &outputs[2]);
    v.insert("psnr_db_current_vs_today".into(), json!(round3(psnr)));
    v.insert("psnr_db_fused_vs_today".into(), json!(round3(psnr_fused)));
    let (r50, r95) = ratio(&cur, &today);
    let met = cur.p50 <= 20.0 && psnr >= 40.0;
    rep.row(
        "7 per-frame CPU: 1080×2400 frame → 576×1280 JPEG q80 (RGB + downscale + JPEG), current vs pre-issue-14",
        format!("{} ({} B, PSNR {:.1} dB vs today)", pp(&cur), outputs[1].len(), psnr),
        format!("{} ({} B)", pp(&today), outputs[0].len()),
        format!("{r50:.3} ({r95:.3})"),
        "≤ 20 ms, PSNR ≥ 40 dB",
        Some(met),
    );
    v.insert("fused_total_p50".into(), json!(round3(fused.p50)));
    v.insert("ratio_p50".into(), json!(round3(r50)));
    v.insert("met".into(), json!(met));
    Value::Object(v)
}

// ---------------------------------------------------------------------------------------------------------------
// Scenario 8: observe (issue 14): one `android_observe` against one `android_screenshot`, and one agent step —
// observe + tap by index against screenshot + UI dump + tap at coordinates — interleaved on the same phone.

async fn observe_and_download(ws: &Ws, addr: SocketAddr, ch: &str) -> Result<(Duration, Value), String> {
    let t = Instant::now();
    let r = ws.invoke(ch, "android_observe", json!({})).await?;
    let url = r["files"][0]["download_url"].as_str().ok_or("no download_url")?.to_owned();
    let (status, _, _) = http_get(addr, &url).await?;
    if status != 200 {
        return Err(format!("download answered {status}"));
    }
    Ok((t.elapsed(), r))
}

fn bench_observe(rt: &tokio::runtime::Runtime, p: &OnePhone, n: usize, rep: &mut Report) {
    let (ws, addr, ch) = (&p.ws, p.conn.addr, p.ch.as_str());
    let index_of = |v: &Value, text: &str| {
        v["elements"].as_array().and_then(|a| a.iter().find(|e| e["text"] == text)).map(|e| e["index"].clone())
    };
    let step_observe = || {
        rt.block_on(async {
            let t = Instant::now();
            let (_, obs) = observe_and_download(ws, addr, ch).await.expect("observe");
            let index = index_of(&obs, "Increment").expect("the button is listed");
            let el = json!({"index": index, "observation_id": obs["observation_id"]});
            ws.invoke(ch, "android_tap", json!({"element": el})).await.expect("tap by index");
            t.elapsed()
        })
    };
    let step_classic = || {
        rt.block_on(async {
            let t = Instant::now();
            screenshot(ws, addr, ch).await.expect("screenshot");
            let ui = ws.invoke(ch, "android_ui_dump", json!({})).await.expect("ui dump");
            let e = ui["elements"].as_array().unwrap().iter().find(|e| e["text"] == "Increment").unwrap().clone();
            ws.invoke(ch, "android_tap", json!({"x": e["center"][0], "y": e["center"][1]})).await.expect("tap");
            t.elapsed()
        })
    };
    for _ in 0..3 {
        rt.block_on(observe_and_download(ws, addr, ch)).unwrap();
        rt.block_on(screenshot(ws, addr, ch)).unwrap();
    }
    let (mut obs, mut shot, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        for k in 0..2 {
            if (i + k) % 2 == 0 {
                obs.push(ms(rt.block_on(observe_and_download(ws, addr, ch)).unwrap().0));
                a.push(ms(step_observe()));
            } else {
                shot.push(ms(rt.block_on(screenshot(ws, addr, ch)).unwrap().0));
                b.push(ms(step_classic()));
            }
        }
    }
    let (so, ss) = (stats(&obs), stats(&shot));
    let (r50, r95) = ratio(&so, &ss);
    rep.row(
        "8a observe: `android_observe` + download vs `android_screenshot` + download",
        pp(&so),
        pp(&ss),
        format!("{r50:.3} ({r95:.3})"),
        "≤ 1.2",
        Some(r50 <= 1.2),
    );
    let (sa, sb) = (stats(&a), stats(&b));
    let (s50, s95) = ratio(&sa, &sb);
    rep.row(
        "8b agent step: observe + tap by index vs screenshot + ui_dump + tap (x, y)",
        pp(&sa),
        pp(&sb),
        format!("{s50:.3} ({s95:.3})"),
        "info",
        None,
    );
    rep.json.insert(
        "observe".into(),
        json!({"observe": so.json(), "screenshot": ss.json(), "ratio_p50": round3(r50), "ratio_p95": round3(r95),
               "target_ratio": 1.2, "met": r50 <= 1.2,
               "step_observe_tap_by_index": sa.json(), "step_screenshot_dump_tap": sb.json(),
               "step_ratio_p50": round3(s50), "step_ratio_p95": round3(s95)}),
    );
}

// ---------------------------------------------------------------------------------------------------------------
// Scenario 5: scale

#[derive(Default)]
struct Lat {
    tap: Vec<f64>,
    shot: Vec<f64>,
    light: Vec<f64>,
    errors: Vec<String>,
}

/// Area-average downscale of an RGBA8 frame to RGB8 (`nw`×`nh`), separable, fixed point (weights in 1/4096).
fn area_downscale_rgba_to_rgb(src: &[u8], w: usize, h: usize, nw: usize, nh: usize) -> Vec<u8> {
    fn taps(n_in: usize, n_out: usize) -> Vec<(usize, Vec<u32>)> {
        let scale = n_in as f64 / n_out as f64;
        (0..n_out)
            .map(|o| {
                let (a, b) = (o as f64 * scale, (o + 1) as f64 * scale);
                let (first, last) = (a.floor() as usize, (b.ceil() as usize).min(n_in));
                let ws: Vec<f64> = (first..last).map(|i| ((i + 1) as f64).min(b) - (i as f64).max(a)).collect();
                let sum: f64 = ws.iter().sum();
                (first, ws.iter().map(|x| (x / sum * 4096.0).round() as u32).collect())
            })
            .collect()
    }
    let (tx, ty) = (taps(w, nw), taps(h, nh));
    // Horizontal: every source row to nw RGB values, kept at 8 extra bits of precision.
    let mut tmp = vec![0u32; nw * 3 * h];
    for y in 0..h {
        let row = &src[y * w * 4..(y + 1) * w * 4];
        let dst = &mut tmp[y * nw * 3..(y + 1) * nw * 3];
        for (ox, (first, ws)) in tx.iter().enumerate() {
            let mut acc = [0u32; 3];
            for (k, wt) in ws.iter().enumerate() {
                let p = &row[(first + k) * 4..(first + k) * 4 + 3];
                acc[0] += u32::from(p[0]) * wt;
                acc[1] += u32::from(p[1]) * wt;
                acc[2] += u32::from(p[2]) * wt;
            }
            dst[ox * 3..ox * 3 + 3].copy_from_slice(&[acc[0] >> 4, acc[1] >> 4, acc[2] >> 4]);
        }
    }
    // Vertical.
    let mut out = vec![0u8; nw * nh * 3];
    for (oy, (first, ws)) in ty.iter().enumerate() {
        let dst = &mut out[oy * nw * 3..(oy + 1) * nw * 3];
        let mut acc = vec![0u32; nw * 3];
        for (k, wt) in ws.iter().enumerate() {
            let row = &tmp[(first + k) * nw * 3..(first + k + 1) * nw * 3];
            for (a, v) in acc.iter_mut().zip(row) {
                *a += v * wt;
            }
        }
        for (d, a) in dst.iter_mut().zip(&acc) {
            *d = ((a + (1 << 19)) >> 20).min(255) as u8;
        }
    }
    out
}

fn bench_scale(sim_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, rep: &mut Report) {
    let phones = env_usize("BENCH_SCALE_PHONES", if quick() { 8 } else { 64 }).max(1);
    let secs = env_usize("BENCH_SCALE_SECS", if quick() { 8 } else { 60 }).max(1);
    let channels = 4 * phones;
    let sockets = (channels / 16).max(1);
    println!("scale: {phones} phones, {channels} channels on {sockets} sockets, {secs} s per side");

    let adb = Adb::start();
    let sims: Vec<SimPhone> = (0..phones)
        .map(|_| sim_rt.block_on(SimPhone::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())).unwrap())
        .collect();
    let serials: Vec<String> = sims.iter().map(SimPhone::serial).collect();
    adb.connect_all(&serials);
    let conn = Connector::start(adb.port, QUIET_LOG);
    let pid = conn.pid();
    let addr = conn.addr;

    // Sockets, channels, bindings: `phones` channels get a phone each; the rest stay unbound.
    let t_setup = Instant::now();
    let (bound, unbound) = rt.block_on(async {
        let mut all = Vec::new();
        for s in 0..sockets {
            let ws = Ws::connect(addr, &format!("s{s}")).await;
            ws.hello().await;
            all.push(ws);
        }
        let mut chans = Vec::new();
        for i in 0..channels {
            let ws = all[i % sockets].clone();
            let ch = ws.open().await;
            chans.push((ws, ch));
        }
        let (bound, unbound): (Vec<_>, Vec<_>) = chans.into_iter().enumerate().partition(|(i, _)| i % 4 == 0);
        let bound: Vec<(Arc<Ws>, String)> = bound.into_iter().map(|(_, c)| c).collect();
        let unbound: Vec<(Arc<Ws>, String)> = unbound.into_iter().map(|(_, c)| c).collect();
        futures_util::future::join_all(bound.iter().map(|(ws, ch)| ws.bind(ch))).await;
        (bound, unbound)
    });
    let setup_ms = ms(t_setup.elapsed());
    let rss_before = proc_status_kb(pid, "VmRSS:").unwrap_or(0);

    // Connector side: every bound channel is an agent in a closed loop (screenshot + download, then 3 taps);
    // every unbound channel alternates descriptor.get and ping every 500 ms.
    let lat = Arc::new(Mutex::new(Lat::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let rss_peak_sampled = Arc::new(AtomicU64::new(0));
    let cpu0 = proc_cpu_ms(pid);
    let t0 = Instant::now();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for (i, (ws, ch)) in bound.iter().cloned().enumerate() {
            let (lat, stop) = (lat.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                let mut j = i; // stagger: not every agent screenshots at once
                while !stop.load(Ordering::Relaxed) {
                    if j % 4 == 0 {
                        match screenshot(&ws, addr, &ch).await {
                            Ok((t, ..)) => lat.lock().unwrap().shot.push(ms(t)),
                            Err(e) => lat.lock().unwrap().errors.push(e),
                        }
                    } else {
                        let t = Instant::now();
                        let (x, y) = (100 + (j % 700) as i64, 300);
                        match ws.invoke(&ch, "android_tap", json!({"x": x, "y": y})).await {
                            Ok(_) => lat.lock().unwrap().tap.push(ms(t.elapsed())),
                            Err(e) => lat.lock().unwrap().errors.push(e),
                        }
                    }
                    j += 1;
                }
            }));
        }
        for (i, (ws, ch)) in unbound.iter().cloned().enumerate() {
            let (lat, stop) = (lat.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis((i as u64 * 500) / unbound_len(channels, phones))).await;
                let mut j = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let r = if j % 2 == 0 {
                        ws.request("connection.descriptor.get", Some(&ch), json!({})).await
                    } else {
                        ws.request("ping", None, json!({})).await
                    };
                    match r {
                        Ok(v) if v["type"] == "connection.descriptor.get.ack" || v["type"] == "pong" => {
                            lat.lock().unwrap().light.push(ms(t.elapsed()))
                        }
                        Ok(v) => lat.lock().unwrap().errors.push(format!("light: {v}")),
                        Err(e) => lat.lock().unwrap().errors.push(e),
                    }
                    j += 1;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }));
        }
        let (stop2, peak) = (stop.clone(), rss_peak_sampled.clone());
        let sampler = tokio::spawn(async move {
            while !stop2.load(Ordering::Relaxed) {
                peak.fetch_max(proc_status_kb(pid, "VmRSS:").unwrap_or(0), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        });
        tokio::time::sleep(Duration::from_secs(secs as u64)).await;
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            let _ = t.await;
        }
        let _ = sampler.await;
    });
    let elapsed = t0.elapsed().as_secs_f64();
    let cpu_conn = proc_cpu_ms(pid) - cpu0;
    let hwm = proc_status_kb(pid, "VmHWM:").unwrap_or(0);
    let warnings = conn.warnings();
    let lat = std::mem::take(&mut *lat.lock().unwrap());
    drop(bound);
    drop(unbound);
    drop(conn);

    // Baseline: the same agents as scripts around the adb CLI, one thread per phone, same mix, same duration.
    let base = Arc::new(Mutex::new(Lat::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let adb = Arc::new(adb);
    let t1 = Instant::now();
    let threads: Vec<_> = serials
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, serial)| {
            let (adb, base, stop) = (adb.clone(), base.clone(), stop.clone());
            std::thread::spawn(move || {
                let out = adb.tmp("scale.png");
                let mut j = i;
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    if j % 4 == 0 {
                        if adb.run(&["-s", &serial, "exec-out", "screencap", "-p"], Some(&out)) {
                            base.lock().unwrap().shot.push(ms(t.elapsed()));
                        } else {
                            base.lock().unwrap().errors.push("screencap".into());
                        }
                    } else {
                        let x = (100 + j % 700).to_string();
                        if adb.run(&["-s", &serial, "shell", "input", "tap", &x, "300"], None) {
                            base.lock().unwrap().tap.push(ms(t.elapsed()));
                        } else {
                            base.lock().unwrap().errors.push("input tap".into());
                        }
                    }
                    j += 1;
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(secs as u64));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let elapsed_b = t1.elapsed().as_secs_f64();
    let base = std::mem::take(&mut *base.lock().unwrap());
    rt.block_on(async {});
    for s in sims {
        sim_rt.block_on(s.shutdown());
    }

    let (st, ss, sl) = (stats(&lat.tap), stats(&lat.shot), stats(&lat.light));
    let (bt, bs) = (stats(&base.tap), stats(&base.shot));
    let ops = (lat.tap.len() + lat.shot.len()) as f64 / elapsed;
    let ops_b = (base.tap.len() + base.shot.len()) as f64 / elapsed_b;
    let tput = |n: usize, e: f64| n as f64 / e;
    rep.row(
        &format!("5 scale: {phones} phones / {channels} ch, tap under load"),
        format!("{} · {:.0}/s", pp(&st), tput(lat.tap.len(), elapsed)),
        format!("{} · {:.0}/s", pp(&bt), tput(base.tap.len(), elapsed_b)),
        format!("{:.3} ({:.3})", st.p50 / bt.p50, st.p95 / bt.p95),
        "info",
        None,
    );
    rep.row(
        &format!("5 scale: {phones} phones, screenshot under load"),
        format!("{} · {:.1}/s", pp(&ss), tput(lat.shot.len(), elapsed)),
        format!("{} · {:.1}/s", pp(&bs), tput(base.shot.len(), elapsed_b)),
        format!("{:.3} ({:.3})", ss.p50 / bs.p50, ss.p95 / bs.p95),
        "info",
        None,
    );
    rep.row(
        "5 scale: device ops throughput (cost ratio = baseline ops/s ÷ connector ops/s)",
        format!("{ops:.0} ops/s"),
        format!("{ops_b:.0} ops/s"),
        format!("{:.3}", ops_b / ops),
        "info",
        None,
    );
    rep.row(
        &format!(
            "5 scale: errors; peak RSS (VmHWM); {} unbound channels' descriptor.get/ping",
            unbound_len(channels, phones)
        ),
        format!("{} errors · {:.1} MB · light {}", lat.errors.len(), hwm as f64 / 1024.0, pp(&sl)),
        format!("{} errors", base.errors.len()),
        "–".into(),
        "0 errors",
        Some(lat.errors.is_empty()),
    );
    let first_errors: Vec<&String> = lat.errors.iter().take(5).collect();
    rep.json.insert(
        "scale".into(),
        json!({"phones": phones, "channels": channels, "bound_channels": phones, "sockets": sockets, "secs": secs,
               "setup_ms": round3(setup_ms),
               "connector": {"tap": st.json(), "screenshot": ss.json(), "descriptor_get_or_ping": sl.json(),
                             "ops_per_s": round3(ops), "tap_per_s": round3(tput(lat.tap.len(), elapsed)),
                             "screenshot_per_s": round3(tput(lat.shot.len(), elapsed)),
                             "light_per_s": round3(tput(lat.light.len(), elapsed)),
                             "errors": lat.errors.len(), "first_errors": first_errors,
                             "vm_hwm_kb": hwm, "vm_rss_peak_sampled_kb": rss_peak_sampled.load(Ordering::Relaxed),
                             "vm_rss_after_setup_kb": rss_before,
                             "cpu_ms_per_device_op": round3(cpu_conn / (lat.tap.len() + lat.shot.len()).max(1) as f64),
                             "warnings_logged": warnings.len()},
               "adb_cli": {"tap": bt.json(), "screenshot": bs.json(), "ops_per_s": round3(ops_b),
                           "tap_per_s": round3(tput(base.tap.len(), elapsed_b)),
                           "screenshot_per_s": round3(tput(base.shot.len(), elapsed_b)), "errors": base.errors.len()},
               "throughput_cost_ratio": round3(ops_b / ops)}),
    );
    if !warnings.is_empty() {
        println!("connector warnings during scale ({}): {:#?}", warnings.len(), &warnings[..warnings.len().min(5)]);
    }
}

fn unbound_len(channels: usize, phones: usize) -> u64 {
    (channels - phones).max(1) as u64
}

// ---------------------------------------------------------------------------------------------------------------
// Scenario 6: footprint

fn health_ok(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

/// Spawn → first 200 from /health (polled every 2 ms); the child is returned running.
fn start_to_healthy(adb_port: u16, data_dir: &Path) -> (Duration, Child, u16) {
    let port = free_port();
    let t = Instant::now();
    let mut child = Command::new(BIN)
        .args(["--log-format", "json", "serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(data_dir)
        .args(["--adb-server", &format!("127.0.0.1:{adb_port}")])
        .env_remove("XAGENT_CONNECTOR_API_KEY")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the connector");
    let deadline = t + Duration::from_secs(20);
    while !health_ok(port) {
        assert!(Instant::now() < deadline, "the connector never answered /health");
        if let Ok(Some(st)) = child.try_wait() {
            panic!("the connector exited: {st}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    (t.elapsed(), child, port)
}

fn tar_member_size(tarball: &Path, name: &str) -> Option<u64> {
    let out = Command::new("tar").arg("-tvzf").arg(tarball).output().ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.last()?.ends_with(&format!("/{name}"))).then(|| f.get(2)?.parse().ok())?
    })
}

fn bench_footprint(sim_rt: &tokio::runtime::Runtime, p: &OnePhone, sim: &SimPhone, n: usize, rep: &mut Report) {
    // Start-to-healthy: cold (new data dir: creates and migrates the database) and warm (existing data dir).
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    let warm_dir = tempfile::tempdir().unwrap();
    let (_, mut c, _) = start_to_healthy(p.adb.port, warm_dir.path());
    let _ = c.kill();
    let _ = c.wait();
    for i in 0..n {
        for k in 0..2 {
            if (i + k) % 2 == 0 {
                let dir = tempfile::tempdir().unwrap();
                let (t, mut c, _) = start_to_healthy(p.adb.port, dir.path());
                cold.push(ms(t));
                let _ = c.kill();
                let _ = c.wait();
            } else {
                let (t, mut c, _) = start_to_healthy(p.adb.port, warm_dir.path());
                warm.push(ms(t));
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    // Idle RSS: up, /health answered, 2 s idle (tracking the adb server with one phone attached).
    let dir = tempfile::tempdir().unwrap();
    let (_, mut c, _) = start_to_healthy(p.adb.port, dir.path());
    std::thread::sleep(Duration::from_secs(2));
    let rss = proc_status_kb(c.id(), "VmRSS:").unwrap_or(0);
    let _ = c.kill();
    let _ = c.wait();

    // Baseline: a fresh adb server (`adb start-server` returns once it accepts), idle with the same phone.
    let mut adb_start = Vec::new();
    let mut adb_rss = 0;
    for i in 0..3 {
        let t = Instant::now();
        let a = Adb::start();
        adb_start.push(ms(t.elapsed()));
        if i == 0 {
            a.connect_all(&[sim.serial()]);
            std::thread::sleep(Duration::from_secs(2));
            adb_rss = a.server_pid().and_then(|pid| proc_status_kb(pid, "VmRSS:")).unwrap_or(0);
        }
    }
    let _ = sim_rt;

    let bin = std::fs::metadata(BIN).map(|m| m.len()).unwrap_or(0);
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("dist");
    let mut musl = serde_json::Map::new();
    if let Ok(rd) = std::fs::read_dir(&dist) {
        for e in rd.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tar.gz") {
                if let Some(sz) = tar_member_size(&e.path(), "xagent-adb-connector") {
                    musl.insert(name, json!(sz));
                }
            } else if name.starts_with("xagent-adb-connector") && e.path().is_file() {
                musl.insert(name, json!(e.metadata().map(|m| m.len()).unwrap_or(0)));
            }
        }
    }
    let adb_path = std::fs::canonicalize(
        String::from_utf8_lossy(&Command::new("which").arg("adb").output().map(|o| o.stdout).unwrap_or_default())
            .trim(),
    )
    .unwrap_or_default();
    let adb_bin = std::fs::metadata(&adb_path).map(|m| m.len()).unwrap_or(0);
    // The Debian adb also needs its private libraries (libbase, libcrypto, libcutils, liblog).
    let ldd = Command::new("ldd").arg(&adb_path).output().map(|o| o.stdout).unwrap_or_default();
    let adb_libs: u64 = String::from_utf8_lossy(&ldd)
        .lines()
        .filter_map(|l| l.split("=>").nth(1)?.split_whitespace().next().map(str::to_owned))
        .filter(|p| p.contains("/android/"))
        .filter_map(|p| std::fs::metadata(p).ok().map(|m| m.len()))
        .sum();

    let (sc, sw, sa) = (stats(&cold), stats(&warm), stats(&adb_start));
    let mb = |b: u64| b as f64 / 1_000_000.0;
    rep.row(
        "6 idle RSS (VmRSS after /health + 2 s) vs idle adb server",
        format!("{:.1} MB", rss as f64 / 1024.0),
        format!("{:.1} MB", adb_rss as f64 / 1024.0),
        format!("{:.3}", rss as f64 / adb_rss.max(1) as f64),
        "≤ 15 MB",
        Some(rss as f64 / 1024.0 <= 15.0),
    );
    rep.row(
        "6 start-to-healthy, new data dir (spawn → /health 200) vs `adb start-server`",
        pp(&sc),
        pp(&sa),
        format!("{:.3} ({:.3})", sc.p50 / sa.p50, sc.p95 / sa.p95),
        "≤ 100 ms",
        Some(sc.p50 <= 100.0),
    );
    rep.row(
        "6 start-to-healthy, existing data dir",
        pp(&sw),
        pp(&sa),
        format!("{:.3} ({:.3})", sw.p50 / sa.p50, sw.p95 / sa.p95),
        "≤ 100 ms",
        Some(sw.p50 <= 100.0),
    );
    let biggest_musl = musl.values().filter_map(Value::as_u64).max();
    rep.row(
        "6 binary size (stripped; musl static from dist/ where present) vs adb + its private libs",
        format!(
            "{:.2} MB glibc{}",
            mb(bin),
            biggest_musl.map(|b| format!(", ≤ {:.2} MB musl", mb(b))).unwrap_or_default()
        ),
        format!("{:.2} MB", mb(adb_bin + adb_libs)),
        format!("{:.3}", bin as f64 / (adb_bin + adb_libs).max(1) as f64),
        "≤ 15 MB",
        Some(mb(bin) <= 15.0 && biggest_musl.is_none_or(|b| mb(b) <= 15.0)),
    );
    rep.json.insert(
        "footprint".into(),
        json!({"idle_rss_kb": rss, "adb_server_idle_rss_kb": adb_rss,
               "start_to_healthy_cold": sc.json(), "start_to_healthy_warm": sw.json(), "adb_start_server": sa.json(),
               "binary_bytes": bin, "dist_musl_binary_bytes": musl, "adb_binary_bytes": adb_bin,
               "adb_private_libs_bytes": adb_libs,
               "targets": {"idle_rss_mb": 15, "start_to_healthy_ms": 100, "binary_mb": 15}}),
    );
}

// ---------------------------------------------------------------------------------------------------------------
// Scenario: stuck phones (issue 11)

/// Three phones stop answering (every `input` and every `sync:` STAT is held forever); `n_stuck` calls are sent to
/// them in waves of 16 per channel (the per-channel bound), each ending in `device_timeout` at a 3 s deadline cap.
/// Measured: the connector's threads and RSS before / during (max) / 2 s after, and a fourth, healthy phone's tap
/// latency while the others hang against the same phone alone, in the same run.
fn bench_hang(
    sim_rt: &tokio::runtime::Runtime,
    rt: &tokio::runtime::Runtime,
    n_stuck: usize,
    n_tap: usize,
    rep: &mut Report,
) {
    let adb = Adb::start();
    let sims: Vec<SimPhone> = (0..4)
        .map(|_| sim_rt.block_on(SimPhone::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())).unwrap())
        .collect();
    let serials: Vec<String> = sims.iter().map(SimPhone::serial).collect();
    adb.connect_all(&serials);
    let conn = Connector::start_with(adb.port, QUIET_LOG, &["--tool-deadline-max", "3s"]);
    let pid = conn.pid();
    let (ws, chans) = rt.block_on(async {
        let ws = Ws::connect(conn.addr, "hang").await;
        ws.hello().await;
        let mut chans = Vec::new();
        for s in &serials {
            let ch = ws.open().await;
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let a = ws
                    .request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": {"serial": s}}))
                    .await
                    .unwrap();
                if a["payload"]["status"] == "authenticated" {
                    break;
                }
                assert!(Instant::now() < deadline, "never bound: {a}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            chans.push(ch);
        }
        (ws, chans)
    });
    let healthy = chans[3].clone();
    let tap = |ch: &str| {
        rt.block_on(async {
            let t = Instant::now();
            ws.invoke(ch, "android_tap", json!({"x": 100, "y": 300})).await.expect("healthy tap");
            ms(t.elapsed())
        })
    };
    // Warm-up: every path the stuck calls take, once, on every phone.
    for (i, ch) in chans.iter().enumerate() {
        sims[i].write_file("/sdcard/f.bin", b"x");
        for _ in 0..3 {
            tap(ch);
        }
        rt.block_on(ws.invoke(ch, "android_file_pull", json!({"path": "/sdcard/f.bin"}))).expect("pull");
    }
    let timeouts = Arc::new(AtomicU64::new(0));
    // Waves of 16 calls per stuck channel (the per-channel bound) until `n` calls were sent; ¾ pulls, ¼ taps.
    let waves = |n: usize, timeouts: Arc<AtomicU64>| {
        let (ws, stuck) = (ws.clone(), chans[..3].to_vec());
        rt.spawn(async move {
            let mut sent = 0;
            while sent < n {
                let mut wave = Vec::new();
                for ch in &stuck {
                    for k in 0..16 {
                        if sent >= n {
                            break;
                        }
                        sent += 1;
                        let (ws, ch, timeouts) = (ws.clone(), ch.clone(), timeouts.clone());
                        wave.push(tokio::spawn(async move {
                            let (tool, args) = if k % 4 == 0 {
                                ("android_tap", json!({"x": 100, "y": 300}))
                            } else {
                                ("android_file_pull", json!({"path": "/sdcard/f.bin"}))
                            };
                            if let Err(e) = ws.invoke(&ch, tool, args).await {
                                if e.contains("device_timeout") {
                                    timeouts.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }));
                    }
                }
                for w in wave {
                    let _ = w.await;
                }
            }
        })
    };
    // One full round of the same calls while the phones still answer: buffers and caches at steady state.
    rt.block_on(waves(48, Arc::default())).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let (threads0, rss0) = (proc_status_kb(pid, "Threads:").unwrap_or(0), proc_status_kb(pid, "VmRSS:").unwrap_or(0));
    let stall = |on: bool| {
        for sim in &sims[..3] {
            for p in ["input", "sync:STAT"] {
                if on {
                    sim.stall(p)
                } else {
                    sim.release(p)
                }
            }
        }
    };
    // Phase 1: threads and RSS around `n_stuck` stuck calls (nothing else running).
    stall(true);
    let job = waves(n_stuck, timeouts.clone());
    let (mut threads_max, mut rss_max) = (threads0, rss0);
    while !job.is_finished() {
        threads_max = threads_max.max(proc_status_kb(pid, "Threads:").unwrap_or(0));
        rss_max = rss_max.max(proc_status_kb(pid, "VmRSS:").unwrap_or(0));
        std::thread::sleep(Duration::from_millis(50));
    }
    rt.block_on(job).unwrap();
    let held = sims[..3].iter().map(|s| s.stalled().len()).sum::<usize>();
    std::thread::sleep(Duration::from_secs(2));
    let (threads1, rss1) = (proc_status_kb(pid, "Threads:").unwrap_or(0), proc_status_kb(pid, "VmRSS:").unwrap_or(0));
    let hung_up = sims[..3].iter().map(|s| s.hung_up().len()).sum::<usize>();
    // Phase 2: the healthy phone's tap, paced (one every 20 ms, same count), alone and while the others hang.
    let paced = |n: usize| -> Vec<f64> {
        (0..n)
            .map(|_| {
                let t = tap(&healthy);
                std::thread::sleep(Duration::from_millis(20));
                t
            })
            .collect()
    };
    stall(false);
    let alone = paced(n_tap);
    stall(true);
    let job = waves(usize::MAX, Arc::default());
    let during = paced(n_tap);
    job.abort();
    stall(false);
    let n_timeouts = timeouts.load(Ordering::Relaxed);
    let (sa, sw) = (stats(&alone), stats(&during));
    let thr_ratio = threads1 as f64 / threads0.max(1) as f64;
    let rss_ratio = rss1 as f64 / rss0.max(1) as f64;
    rep.row(
        &format!("9 hang: threads before / max during / 2 s after {n_stuck} stuck calls on 3 phones"),
        format!("{threads0} / {threads_max} / {threads1}"),
        format!("{threads0} (before)"),
        format!("{thr_ratio:.3}"),
        "after ≤ 1.1",
        Some(thr_ratio <= 1.1),
    );
    rep.row(
        "9b hang: RSS before / max during / 2 s after",
        format!("{:.1} / {:.1} / {:.1} MiB", rss0 as f64 / 1024.0, rss_max as f64 / 1024.0, rss1 as f64 / 1024.0),
        format!("{:.1} MiB (before)", rss0 as f64 / 1024.0),
        format!("{rss_ratio:.3}"),
        "after ≤ 1.1",
        Some(rss_ratio <= 1.1),
    );
    let (r50, r95) = ratio(&sw, &sa);
    rep.row(
        &format!("9c healthy phone's tap (every 20 ms, n = {n_tap}) while 3 phones hang vs alone"),
        pp(&sw),
        pp(&sa),
        format!("{r50:.3} ({r95:.3})"),
        "p95 ≤ 1.5",
        Some(r95 <= 1.5),
    );
    rep.json.insert(
        "hang".into(),
        json!({"stuck_calls": n_stuck, "device_timeouts": n_timeouts, "still_held_on_phones_at_end": held,
               "hung_up_by_connector": hung_up,
               "threads": {"before": threads0, "max_during": threads_max, "after_2s": threads1, "ratio": round3(thr_ratio)},
               "rss_kib": {"before": rss0, "max_during": rss_max, "after_2s": rss1, "ratio": round3(rss_ratio)},
               "healthy_tap": {"alone": sa.json(), "while_others_hang": sw.json(),
                               "ratio_p50": round3(r50), "ratio_p95": round3(r95)}}),
    );
    let warnings = conn.warnings();
    if !warnings.is_empty() {
        println!("connector warnings (hang): {} lines", warnings.len());
    }
    for s in sims {
        sim_rt.block_on(s.shutdown());
    }
}

// ---------------------------------------------------------------------------------------------------------------

fn main() {
    // `cargo bench` passes `--bench`; a filter argument selects scenarios by name (tap, states, screenshot, ui,
    // breakdown, observe, scale, footprint, hang).
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let want = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let q = quick();
    let n_tap = if q { 30 } else { 200 };
    let n_heavy = if q { 8 } else { 30 };

    let sim_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let started = Instant::now();
    let mut rep = Report { rows: Vec::new(), json: serde_json::Map::new() };
    rep.json.insert("machine".into(), machine());

    let mut sims = Vec::new();
    {
        let p = one_phone(&sim_rt, &rt, &mut sims);
        if want("tap") {
            bench_tap(&rt, &p, n_tap, &mut rep);
            eprintln!("[{:.0} s] tap done", started.elapsed().as_secs_f64());
        }
        if want("states") {
            let sim = sims[0].clone();
            bench_states(&rt, &p, &sim, n_tap, &mut rep);
            eprintln!("[{:.0} s] states done", started.elapsed().as_secs_f64());
        }
        if want("screenshot") {
            bench_screenshot(&rt, &p, n_heavy, &mut rep);
            eprintln!("[{:.0} s] screenshot done", started.elapsed().as_secs_f64());
        }
        if want("ui") {
            bench_ui_dump(&rt, &p, n_heavy, &mut rep);
            eprintln!("[{:.0} s] ui dump done", started.elapsed().as_secs_f64());
        }
        if want("footprint") {
            let sim = sims[0].clone();
            bench_footprint(&sim_rt, &p, &sim, if q { 3 } else { 10 }, &mut rep);
            eprintln!("[{:.0} s] footprint done", started.elapsed().as_secs_f64());
        }
        if want("observe") {
            bench_observe(&rt, &p, n_heavy, &mut rep);
            eprintln!("[{:.0} s] observe done", started.elapsed().as_secs_f64());
        }
        if want("breakdown") {
            bench_breakdown(&sim_rt, &rt, &p, if q { 5 } else { 15 }, &mut rep);
            eprintln!("[{:.0} s] breakdown done", started.elapsed().as_secs_f64());
        }
        let warnings = p.conn.warnings();
        if !warnings.is_empty() {
            println!("connector warnings: {warnings:#?}");
        }
    }
    for s in sims {
        sim_rt.block_on(s.shutdown());
    }
    if want("screenshot-usb") {
        bench_screenshot_usb(&sim_rt, &rt, n_heavy, &mut rep);
        eprintln!("[{:.0} s] screenshot-usb done", started.elapsed().as_secs_f64());
    }
    if want("hang") {
        bench_hang(&sim_rt, &rt, env_usize("BENCH_HANG_CALLS", if q { 100 } else { 500 }), 300, &mut rep);
        eprintln!("[{:.0} s] hang done", started.elapsed().as_secs_f64());
    }
    if want("scale") {
        bench_scale(&sim_rt, &rt, &mut rep);
        eprintln!("[{:.0} s] scale done", started.elapsed().as_secs_f64());
    }

    rep.json.insert("total_secs".into(), json!(round3(started.elapsed().as_secs_f64())));
    rep.json
        .insert("loadavg_at_end".into(), json!(std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()));
    let table = rep.table();
    rep.json.insert("table_markdown".into(), json!(table));
    let out = std::env::var("BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/results.json"));
    if let Some(d) = out.parent() {
        let _ = std::fs::create_dir_all(d);
    }
    std::fs::write(&out, serde_json::to_string_pretty(&Value::Object(rep.json)).unwrap()).expect("write results");
    println!("\n{table}\nresults: {} ({:.0} s)", out.display(), started.elapsed().as_secs_f64());
}
