//! Scenario 6: footprint: start-up, memory, binary and package size.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use xagent_adb_connector::sim::SimPhone;

use crate::common::*;

fn health_ok(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").is_err() {
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

pub(crate) fn bench_footprint(
    sim_rt: &tokio::runtime::Runtime,
    p: &OnePhone,
    sim: &SimPhone,
    n: usize,
    rep: &mut Report,
) {
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
