//! What every scenario stands on: statistics, the private adb server, the connector binary, the pipelined
//! WebSocket client, the baselines' report, and the one-phone setup the single-phone scenarios share.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, SocketAddrV4, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use xagent_adb_connector::sim::{SimConfig, SimPhone};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_xagent-adb-connector");
pub(crate) const REQ_TIMEOUT: Duration = Duration::from_secs(60);
/// The connector's log filter for every measured run: warnings only, plus the one start-up line we parse.
pub(crate) const QUIET_LOG: &str = "warn,xagent_adb_connector::run=info";

// ---------------------------------------------------------------------------------------------------------------
// Statistics

#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    pub(crate) n: usize,
    pub(crate) p50: f64,
    pub(crate) p95: f64,
    pub(crate) mean: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

pub(crate) fn stats(samples: &[f64]) -> Stats {
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
    pub(crate) fn json(&self) -> Value {
        let r = |x: f64| (x * 1000.0).round() / 1000.0;
        json!({"n": self.n, "p50": r(self.p50), "p95": r(self.p95), "mean": r(self.mean), "min": r(self.min), "max": r(self.max)})
    }
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub(crate) fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

pub(crate) fn quick() -> bool {
    std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1")
}

// ---------------------------------------------------------------------------------------------------------------
// /proc helpers

pub(crate) fn proc_status_kb(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find_map(|l| l.strip_prefix(field)?.trim().trim_end_matches("kB").trim().parse().ok())
}

/// utime + stime of a process, in ms (clock ticks assumed 100 Hz, as on every Linux build we target).
pub(crate) fn proc_cpu_ms(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ")": state is field 3, utime 14, stime 15 → indices 11, 12.
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) * 10.0
}

/// Nanoseconds on CPU of each live thread of a process (`/proc/PID/task/TID/schedstat`, first field): exact,
/// where `utime + stime` come in 10 ms ticks (a 20 ms screenshot read as 10 or 30).
pub(crate) fn task_cpu_ns(pid: u32) -> std::collections::HashMap<u32, u64> {
    let mut out = std::collections::HashMap::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return out };
    for e in dir.flatten() {
        let Some(tid) = e.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else { continue };
        let s = std::fs::read_to_string(e.path().join("schedstat")).unwrap_or_default();
        if let Some(ns) = s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()) {
            out.insert(tid, ns);
        }
    }
    out
}

/// CPU a process spent between two [`task_cpu_ns`] snapshots, in ms: threads in both count their difference,
/// threads born in between all of theirs; a thread that ended in between loses only its last moments (its
/// earlier time is in neither difference).
pub(crate) fn task_cpu_ms_between(
    before: &std::collections::HashMap<u32, u64>,
    after: &std::collections::HashMap<u32, u64>,
) -> f64 {
    let ns: u64 = after.iter().map(|(tid, a)| a.saturating_sub(before.get(tid).copied().unwrap_or(0))).sum();
    ns as f64 / 1e6
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("ephemeral port")
}

// ---------------------------------------------------------------------------------------------------------------
// A private adb server (the real binary), never the default port

pub(crate) struct Adb {
    pub(crate) port: u16,
    pub(crate) home: tempfile::TempDir,
    pub(crate) seq: AtomicU64,
}

impl Adb {
    pub(crate) fn start() -> Adb {
        let adb = Adb { port: free_port(), home: tempfile::tempdir().unwrap(), seq: AtomicU64::new(0) };
        let st = adb.cmd(&["start-server"]).stdout(Stdio::null()).stderr(Stdio::null()).status().expect("run adb");
        assert!(st.success(), "adb start-server failed (is `adb` installed? apt-get install -y adb)");
        adb
    }

    pub(crate) fn addr(&self) -> SocketAddrV4 {
        SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, self.port)
    }

    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
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
    pub(crate) fn run(&self, args: &[&str], out: Option<&Path>) -> bool {
        let mut c = self.cmd(args);
        match out {
            Some(p) => c.stdout(std::fs::File::create(p).unwrap()),
            None => c.stdout(Stdio::null()),
        };
        c.stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
    }

    pub(crate) fn text(&self, args: &[&str]) -> String {
        let out = self.cmd(args).stderr(Stdio::null()).output().expect("run adb");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn tmp(&self, name: &str) -> PathBuf {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        self.home.path().join(format!("{n}-{name}"))
    }

    /// `adb connect` every serial and waits until all are in state `device`.
    pub(crate) fn connect_all(&self, serials: &[String]) {
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
    pub(crate) fn server_pid(&self) -> Option<u32> {
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

pub(crate) struct Connector {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
    pub(crate) logs: Arc<Mutex<Vec<String>>>,
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) _run: Option<tempfile::TempDir>,
}

impl Connector {
    pub(crate) fn start(adb_port: u16, rust_log: &str) -> Connector {
        Self::start_with(adb_port, rust_log, &[])
    }

    pub(crate) fn start_with(adb_port: u16, rust_log: &str, extra: &[&str]) -> Connector {
        Self::start_bin(BIN, adb_port, rust_log, extra)
    }

    /// [`Connector::start_with`] for another build of the connector (a "before" binary kept outside the tree).
    pub(crate) fn start_bin(bin: &str, adb_port: u16, rust_log: &str, extra: &[&str]) -> Connector {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(bin);
        cmd.args(["--log-format", "json", "serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .args(["--adb-server", &format!("127.0.0.1:{adb_port}")])
            .args(extra);
        // The memory file cache in a folder of its own (as systemd's RuntimeDirectory=), gone with the run even
        // though the connector is killed.
        let run = tempfile::Builder::new().prefix("bench-run-").tempdir_in("/dev/shm").ok();
        if let Some(r) = &run {
            cmd.env("RUNTIME_DIRECTORY", r.path());
        }
        let mut c = Self::spawn(cmd, dir, rust_log);
        c._run = run;
        c
    }

    /// Starts `cmd` (a connector command line, perhaps behind a wrapper such as strace) with `dir` as its data dir.
    pub(crate) fn spawn(mut cmd: Command, dir: tempfile::TempDir, rust_log: &str) -> Connector {
        let mut child = cmd
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
        Connector { child, addr, logs, _dir: dir, _run: None }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn warnings(&self) -> Vec<String> {
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

pub(crate) struct Ws {
    pub(crate) out: mpsc::UnboundedSender<Message>,
    pub(crate) pending: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>,
    pub(crate) seq: AtomicU64,
    pub(crate) tag: String,
}

impl Ws {
    pub(crate) async fn connect(addr: SocketAddr, tag: &str) -> Arc<Ws> {
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

    pub(crate) async fn request(&self, kind: &str, channel: Option<&str>, payload: Value) -> Result<Value, String> {
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

    pub(crate) async fn hello(&self) {
        let p = json!({"connector_card_id": "device.adb", "protocol_version": "3.0",
                       "supported_profiles": ["xagent.device.v1"]});
        let ack = self.request("connector.hello", None, p).await.unwrap();
        assert_eq!(ack["type"], "connector.hello.ack", "{ack}");
    }

    pub(crate) async fn open(&self) -> String {
        let ack = self.request("channel.open", None, json!({})).await.unwrap();
        assert_eq!(ack["type"], "channel.open.ack", "{ack}");
        ack["connector_channel_id"].as_str().unwrap().to_owned()
    }

    /// Binds any free online phone to `ch` (pool semantics), retrying while devices are still being verified.
    pub(crate) async fn bind(&self, ch: &str) {
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

    /// `tool.invoke` with a `tool_call_id` (so side effects get their idempotency record, as xAgent's do).
    pub(crate) async fn invoke_id(
        &self,
        ch: &str,
        tool: &str,
        mut args: Value,
        call_id: &str,
    ) -> Result<Value, String> {
        args["connector_channel_id"] = json!(ch);
        let p = json!({"tool_id": tool, "arguments": args, "context": {"tool_call_id": call_id}});
        let ack = self.request("tool.invoke", Some(ch), p).await?;
        if ack["type"] != "tool.invoke.ack" || ack.get("error").is_some_and(|e| !e.is_null()) {
            return Err(format!("{tool}: {ack}"));
        }
        Ok(ack["payload"]["result"].clone())
    }

    /// `tool.invoke`; the result, or the error as text.
    pub(crate) async fn invoke(&self, ch: &str, tool: &str, mut args: Value) -> Result<Value, String> {
        args["connector_channel_id"] = json!(ch);
        let ack = self.request("tool.invoke", Some(ch), json!({"tool_id": tool, "arguments": args})).await?;
        if ack["type"] != "tool.invoke.ack" || ack.get("error").is_some_and(|e| !e.is_null()) {
            return Err(format!("{tool}: {ack}"));
        }
        Ok(ack["payload"]["result"].clone())
    }
}

/// GET over a fresh connection (as a download client does); returns (status, body bytes, time to first byte).
pub(crate) async fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, usize, Duration), String> {
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
pub(crate) async fn screenshot(
    ws: &Ws,
    addr: SocketAddr,
    ch: &str,
) -> Result<(Duration, Duration, Duration, usize), String> {
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

pub(crate) struct Report {
    pub(crate) rows: Vec<Row>,
    pub(crate) json: serde_json::Map<String, Value>,
}

pub(crate) struct Row {
    pub(crate) scenario: String,
    pub(crate) connector: String,
    pub(crate) baseline: String,
    pub(crate) ratio: String,
    pub(crate) target: String,
    pub(crate) met: Option<bool>,
}

impl Report {
    pub(crate) fn row(
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

    pub(crate) fn table(&self) -> String {
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

pub(crate) fn pp(s: &Stats) -> String {
    format!("{:.2} / {:.2} ms", s.p50, s.p95)
}

pub(crate) fn ratio(a: &Stats, b: &Stats) -> (f64, f64) {
    (a.p50 / b.p50, a.p95 / b.p95)
}

pub(crate) fn machine() -> Value {
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

pub(crate) struct OnePhone {
    pub(crate) adb: Adb,
    pub(crate) serial: String,
    pub(crate) conn: Connector,
    pub(crate) ws: Arc<Ws>,
    pub(crate) ch: String,
}

pub(crate) fn one_phone(
    sim_rt: &tokio::runtime::Runtime,
    rt: &tokio::runtime::Runtime,
    sims: &mut Vec<SimPhone>,
) -> OnePhone {
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
