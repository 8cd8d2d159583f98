//! Scenario live (issue 20): the wall's live view (`live.mjpeg`) of a 720x1600 phone — frames per second while the
//! screen changes, the connector's CPU per frame, and the connector's CPU per second while a viewer watches a
//! still screen (which must not be re-encoded at the live rate).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use xagent_adb_connector::sim::{SimConfig, SimPhone};

use crate::common::*;

const KEY: &str = "bench-live-key-0c5e2a";

/// A minimal `multipart/x-mixed-replace` reader over raw HTTP/1.1 (chunked transfer decoded).
struct Stream {
    sock: TcpStream,
    raw: Vec<u8>,
    body: Vec<u8>,
}

impl Stream {
    async fn open(addr: SocketAddr, path: &str) -> Stream {
        let mut sock = TcpStream::connect(addr).await.expect("connect");
        let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {KEY}\r\n\r\n");
        sock.write_all(req.as_bytes()).await.expect("request");
        let mut s = Stream { sock, raw: Vec::new(), body: Vec::new() };
        let split = loop {
            if let Some(p) = s.raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            s.read_more().await.expect("response head");
        };
        let head = String::from_utf8_lossy(&s.raw[..split]).into_owned();
        assert!(head.starts_with("HTTP/1.1 200"), "live.mjpeg: {head}");
        assert!(head.to_ascii_lowercase().contains("transfer-encoding: chunked"), "{head}");
        s.raw.drain(..split + 4);
        s
    }

    async fn read_more(&mut self) -> Option<()> {
        let mut buf = vec![0u8; 256 * 1024];
        let n = self.sock.read(&mut buf).await.ok()?;
        (n > 0).then(|| self.raw.extend_from_slice(&buf[..n]))
    }

    fn dechunk(&mut self) {
        loop {
            let Some(eol) = self.raw.windows(2).position(|w| w == b"\r\n") else { return };
            let size = usize::from_str_radix(std::str::from_utf8(&self.raw[..eol]).unwrap().trim(), 16).unwrap();
            if self.raw.len() < eol + 2 + size + 2 {
                return;
            }
            self.body.extend_from_slice(&self.raw[eol + 2..eol + 2 + size]);
            self.raw.drain(..eol + 2 + size + 2);
        }
    }

    /// The next part's JPEG, or `None` when nothing came within `within`.
    async fn next(&mut self, within: Duration) -> Option<Vec<u8>> {
        let end = Instant::now() + within;
        loop {
            self.dechunk();
            if let Some(p) = self.part() {
                return Some(p);
            }
            let left = end.checked_duration_since(Instant::now())?;
            tokio::time::timeout(left, self.read_more()).await.ok()??;
        }
    }

    fn part(&mut self) -> Option<Vec<u8>> {
        let split = self.body.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&self.body[..split]).into_owned();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("Content-Length");
        let start = split + 4;
        if self.body.len() < start + len + 2 {
            return None;
        }
        let jpeg = self.body[start..start + len].to_vec();
        self.body.drain(..start + len + 2);
        Some(jpeg)
    }
}

/// The bench process's own CPU (the simulated phone's work is in it), in ms.
fn self_cpu_ms() -> f64 {
    proc_cpu_ms(std::process::id())
}

fn captures(sim: &SimPhone) -> usize {
    let gzip = xagent_adb_connector::pixels::capture::GZIP_CAPTURE;
    sim.commands().iter().filter(|c| c.as_str() == "framebuffer:" || c.as_str() == gzip).count()
}

/// What one window of watching measured.
struct Window {
    secs: f64,
    /// Parts received (new pictures and keep-alives).
    frames: usize,
    /// Parts whose picture differs from the one before.
    changed: usize,
    captures: usize,
    connector_cpu_ms: f64,
    sim_cpu_ms: f64,
    adb_server_cpu_ms: f64,
}

impl Window {
    fn json(&self) -> Value {
        json!({"secs": round3(self.secs), "frames": self.frames, "changed_frames": self.changed,
               "frames_per_s": round3(self.frames as f64 / self.secs),
               "captures_per_s": round3(self.captures as f64 / self.secs),
               "connector_cpu_ms_per_s": round3(self.connector_cpu_ms / self.secs),
               "connector_cpu_ms_per_frame": round3(self.connector_cpu_ms / self.frames.max(1) as f64),
               "bench_process_cpu_ms_per_s": round3(self.sim_cpu_ms / self.secs),
               "adb_server_cpu_ms_per_s": round3(self.adb_server_cpu_ms / self.secs)})
    }
}

async fn watch(stream: &mut Stream, sim: &SimPhone, pid: u32, adb_pid: u32, window: Duration) -> Window {
    let (c0, s0, n0, a0) = (proc_cpu_ms(pid), self_cpu_ms(), captures(sim), proc_cpu_ms(adb_pid));
    let started = Instant::now();
    let (mut frames, mut changed) = (0, 0);
    let mut last: Option<Vec<u8>> = None;
    while let Some(left) = window.checked_sub(started.elapsed()) {
        let Some(jpeg) = stream.next(left).await else { break };
        frames += 1;
        changed += usize::from(last.as_ref() != Some(&jpeg));
        last = Some(jpeg);
    }
    let secs = started.elapsed().as_secs_f64();
    Window {
        secs,
        frames,
        changed,
        captures: captures(sim) - n0,
        connector_cpu_ms: proc_cpu_ms(pid) - c0,
        sim_cpu_ms: self_cpu_ms() - s0,
        adb_server_cpu_ms: proc_cpu_ms(adb_pid) - a0,
    }
}

/// Issue 20: one viewer of a 720x1600 phone (the bar: ≥ 4 frames/s while its screen changes). Window A:
/// the simulated screen redraws a counter every 100 ms (`SimPhone::set_ticking_screen`), so every capture
/// differs. Window B: the same viewer while the screen is still — only keep-alives go out, and the connector's
/// CPU per second is what a watched idle phone costs the box. The phone has no modelled costs (free link, free
/// gzip), so the figures are the connector's own plus the simulator's real work on this box.
pub(crate) fn bench_live(sim_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, rep: &mut Report) {
    let secs = if quick() { 6 } else { 20 };
    let window = Duration::from_secs(secs);
    let adb = Adb::start();
    let cfg = SimConfig { screen_width: 720, screen_height: 1600, ..SimConfig::default() };
    let sim = sim_rt.block_on(SimPhone::start("127.0.0.1:0".parse().unwrap(), cfg)).unwrap();
    adb.connect_all(&[sim.serial()]);
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    // The live loop's per-frame trace lines give the breakdown (capture vs encode); one short line per frame.
    let log = format!("{QUIET_LOG},xagent_adb_connector::wall::live=trace");
    let conn = Connector::start_with(adb.port, &log, &["--api-key-file", key_file.to_str().unwrap()]);
    let pid = conn.pid();
    let adb_pid = adb.server_pid().unwrap_or(0);
    let logs_at = || conn.logs.lock().unwrap().len();
    let (a, b, marks) = rt.block_on(async {
        let id = device_id(conn.addr, &sim.serial()).await;
        let path = format!("/api/v1/devices/{id}/live.mjpeg");
        sim.set_ticking_screen(Some(Duration::from_millis(100)));
        let mut s = Stream::open(conn.addr, &path).await;
        s.next(Duration::from_secs(30)).await.expect("a first frame");
        // Warm-up: the capture loop and the phone's capture path settle.
        watch(&mut s, &sim, pid, adb_pid, Duration::from_secs(2)).await;
        let m0 = logs_at();
        let a = watch(&mut s, &sim, pid, adb_pid, window).await;
        let m1 = logs_at();
        sim.set_ticking_screen(None);
        tokio::time::sleep(Duration::from_secs(1)).await;
        // Drain what the loop sent while the screen came to rest.
        while s.next(Duration::from_millis(500)).await.is_some() {}
        let m2 = logs_at();
        let b = watch(&mut s, &sim, pid, adb_pid, window).await;
        (a, b, [m0, m1, m2, logs_at()])
    });
    let logs = conn.logs.lock().unwrap().clone();
    let (ba, bb) = (breakdown(&logs[marks[0]..marks[1]]), breakdown(&logs[marks[2]..marks[3]]));
    let fps = a.frames as f64 / a.secs;
    let split = |b: &Value| match (b["capture_ms_p50"].as_f64(), b["publish_ms_p50"].as_f64()) {
        (Some(c), Some(p)) => format!("; per frame p50: capture {c:.1} ms, signature + encode {p:.1} ms (overlapped)"),
        _ => String::new(),
    };
    rep.row(
        "11 live view: 720x1600 phone whose screen changes every 100 ms, one viewer",
        format!(
            "{fps:.2} frames/s ({} of {} changed), {:.1} ms connector CPU/frame, {:.2} captures/s",
            a.changed,
            a.frames,
            a.connector_cpu_ms / a.frames.max(1) as f64,
            a.captures as f64 / a.secs
        ) + &split(&ba),
        format!(
            "simulator + client {:.0} ms, adb server {:.0} ms CPU/s",
            a.sim_cpu_ms / a.secs,
            a.adb_server_cpu_ms / a.secs
        ),
        "–".into(),
        "≥ 4 frames/s",
        Some(fps >= 4.0),
    );
    rep.row(
        "11 live view: the same viewer, still screen",
        format!(
            "{:.1} ms connector CPU/s, {} parts in {:.0} s (keep-alives), {:.2} captures/s",
            b.connector_cpu_ms / b.secs,
            b.frames,
            b.secs,
            b.captures as f64 / b.secs
        ) + &split(&bb),
        format!(
            "simulator + client {:.0} ms, adb server {:.0} ms CPU/s",
            b.sim_cpu_ms / b.secs,
            b.adb_server_cpu_ms / b.secs
        ),
        "–".into(),
        "no JPEG encode per capture",
        None,
    );
    drop(conn);
    // The same changing screen through the uncompressed `framebuffer:` path (`--capture-compression off`): on
    // loopback the phone's gzip and the host's inflate buy nothing, so this row says what they cost here.
    let conn = Connector::start_with(
        adb.port,
        &log,
        &["--api-key-file", key_file.to_str().unwrap(), "--capture-compression", "off"],
    );
    let (pid, logs_at) = (conn.pid(), || conn.logs.lock().unwrap().len());
    let (c, marks) = rt.block_on(async {
        let id = device_id(conn.addr, &sim.serial()).await;
        sim.set_ticking_screen(Some(Duration::from_millis(100)));
        let mut s = Stream::open(conn.addr, &format!("/api/v1/devices/{id}/live.mjpeg")).await;
        s.next(Duration::from_secs(30)).await.expect("a first frame");
        watch(&mut s, &sim, pid, adb_pid, Duration::from_secs(2)).await;
        let m0 = logs_at();
        let c = watch(&mut s, &sim, pid, adb_pid, window).await;
        sim.set_ticking_screen(None);
        (c, [m0, logs_at()])
    });
    let bc = breakdown(&conn.logs.lock().unwrap()[marks[0]..marks[1]]);
    rep.row(
        "11 live view: changing screen as above, `--capture-compression off` (framebuffer, no gzip)",
        format!(
            "{:.2} frames/s, {:.1} ms connector CPU/frame",
            c.frames as f64 / c.secs,
            c.connector_cpu_ms / c.frames.max(1) as f64
        ) + &split(&bc),
        format!(
            "simulator + client {:.0} ms, adb server {:.0} ms CPU/s",
            c.sim_cpu_ms / c.secs,
            c.adb_server_cpu_ms / c.secs
        ),
        "–".into(),
        "info",
        None,
    );
    rep.json.insert(
        "live".into(),
        json!({"changing": a.json(), "still": b.json(), "screen": "720x1600", "changing_breakdown": ba,
               "still_breakdown": bb, "changing_no_compression": c.json(), "changing_no_compression_breakdown": bc}),
    );
    drop(conn);
    sim_rt.block_on(sim.shutdown());
}

/// The wall's id of the phone, once the connector lists it online.
async fn device_id(addr: SocketAddr, serial: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        let req = format!(
            "GET /api/v1/devices HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {KEY}\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.expect("request");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.expect("response");
        let text = String::from_utf8_lossy(&raw);
        let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        if let Ok(v) = serde_json::from_str::<Value>(body) {
            let found = v["devices"].as_array().into_iter().flatten().find(|d| d["serial"] == serial);
            if let Some(d) = found.filter(|d| d["state"] == "online") {
                return d["id"].as_str().expect("id").to_owned();
            }
        }
        assert!(Instant::now() < deadline, "the phone never came online: {text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Medians of the live loop's trace lines (`capture_ms` of "live view: captured", `publish_ms` of "live view:
/// frame") and how many frames were encoded; empty when the connector wrote none (an older build).
fn breakdown(lines: &[String]) -> Value {
    let (mut cap, mut publish, mut changed) = (Vec::new(), Vec::new(), 0);
    for l in lines {
        let Ok(v) = serde_json::from_str::<Value>(l) else { continue };
        if let Some(ms) = v["capture_ms"].as_f64() {
            cap.push(ms);
        }
        if let Some(ms) = v["publish_ms"].as_f64() {
            publish.push(ms);
            changed += usize::from(v["changed"] == true);
        }
    }
    if cap.is_empty() || publish.is_empty() {
        return json!({});
    }
    json!({"capture_ms_p50": stats(&cap).p50, "capture_ms_p95": stats(&cap).p95,
           "publish_ms_p50": stats(&publish).p50, "publish_ms_p95": stats(&publish).p95,
           "frames_published": publish.len(), "frames_changed": changed})
}
