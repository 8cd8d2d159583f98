//! Scenario footprint-writes (issue 21): what reaches persistent storage per call.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use xagent_adb_connector::sim::{SimConfig, SimPhone};

use crate::observe::observe_and_download;

use serde_json::{json, Value};

use crate::common::*;

/// Bytes written into files under the data dir, and fsync/fdatasync calls on them, from an strace log (`-f -y
/// -ttt`), split by time window. A write is counted by its return value (what the kernel accepted), attributed to
/// the file its descriptor names (`-y`). Lines split by `-f` (`<unfinished ...>` / `<... resumed>`) are joined.
#[derive(Clone, Copy, Debug, Default)]
struct Writes {
    bytes: u64,
    syncs: u64,
    /// Bytes written under the file cache when it is elsewhere (memory): reported, not counted.
    cache_bytes: u64,
    /// Of `bytes`, those appended to SQLite's write-ahead log (the rest: checkpoints into connector.db, cache).
    wal_bytes: u64,
}

fn strace_writes(log: &Path, data: &Path, cache: Option<&Path>, windows: &[(f64, f64)]) -> Vec<Writes> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut out = vec![Writes::default(); windows.len()];
    let mut pending: HashMap<String, String> = HashMap::new();
    let (data, cache) = (data.to_string_lossy().into_owned(), cache.map(|c| c.to_string_lossy().into_owned()));
    for line in text.lines() {
        let mut parts = line.splitn(3, ' ');
        let (Some(pid), Some(ts), Some(rest)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let Ok(ts) = ts.parse::<f64>() else { continue };
        let call = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid.to_owned(), head.to_owned());
            continue;
        } else if rest.starts_with("<... ") {
            let Some(head) = pending.remove(pid) else { continue };
            let tail = rest.split_once("resumed>").map_or("", |(_, t)| t);
            format!("{head}{tail}")
        } else {
            rest.to_owned()
        };
        let Some((name, args)) = call.split_once('(') else { continue };
        let Some(path) = args.split_once('<').and_then(|(_, r)| r.split_once('>')).map(|(p, _)| p) else { continue };
        let ret: i64 =
            call.rsplit_once(" = ").and_then(|(_, r)| r.split_whitespace().next()?.parse().ok()).unwrap_or(-1);
        let Some(w) = windows.iter().position(|(a, b)| ts >= *a && ts <= *b) else { continue };
        let in_cache = cache.as_deref().is_some_and(|c| path.starts_with(c));
        let in_data = path.starts_with(data.as_str()) && !in_cache;
        match name {
            "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2" if ret > 0 => {
                if in_data {
                    out[w].bytes += ret as u64;
                    if path.ends_with("-wal") {
                        out[w].wal_bytes += ret as u64;
                    }
                } else if in_cache {
                    out[w].cache_bytes += ret as u64;
                }
            }
            "fsync" | "fdatasync" if in_data => out[w].syncs += 1,
            _ => {}
        }
    }
    out
}

fn epoch() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// The pid strace started (its first child).
fn traced_pid(strace_pid: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{strace_pid}/task/{strace_pid}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

/// Issue 21: bytes written to persistent storage (files under the data dir: SQLite database and WAL, and the file
/// cache when it is on disk) and fsyncs, per `android_tap` in a burst on several phones, per `android_screenshot`
/// with its download and per `android_observe` with its download. Each variant of the connector runs under
/// `strace` against the same adb server and simulated phones in one run: this build (cache in memory), this build
/// with the cache put back on disk (`--cache-dir DATA_DIR/files`), and, when `BENCH_FOOTPRINT_BASELINE` names
/// one, a binary of an older revision (the layout before issue 21). Needs `strace`.
pub(crate) fn bench_footprint_writes(sim_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, rep: &mut Report) {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("footprint-writes: strace not installed (apt-get install -y strace); skipped");
        return;
    }
    let phones = env_usize("BENCH_FOOTPRINT_PHONES", 5);
    let taps_per_phone = if quick() { 10 } else { 40 };
    let heavy = if quick() { 3 } else { 10 };
    let adb = Adb::start();
    let sims: Vec<SimPhone> = (0..phones)
        .map(|_| sim_rt.block_on(SimPhone::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())).unwrap())
        .collect();
    let serials: Vec<String> = sims.iter().map(|s| s.serial()).collect();
    adb.connect_all(&serials);
    let mut variants: Vec<(String, String, bool)> =
        vec![("this build".into(), BIN.into(), false), ("this build, --cache-dir on disk".into(), BIN.into(), true)];
    if let Ok(old) = std::env::var("BENCH_FOOTPRINT_BASELINE") {
        variants.push((format!("baseline {}", Path::new(&old).file_name().unwrap().to_string_lossy()), old, false));
    }
    let mut results = serde_json::Map::new();
    for (name, bin, disk_cache) in &variants {
        let dir = tempfile::tempdir().unwrap();
        let data = std::fs::canonicalize(dir.path()).unwrap();
        let run = tempfile::Builder::new().prefix("bench-run-").tempdir_in("/dev/shm").ok();
        let log = data.with_extension("strace");
        let mut cmd = Command::new("strace");
        cmd.args([
            "-f",
            "-qq",
            "-y",
            "-ttt",
            "-s",
            "0",
            "-e",
            "trace=write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync",
        ])
        .arg("-o")
        .arg(&log)
        .arg("--")
        .arg(bin)
        .args(["--log-format", "json", "serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .args(["--adb-server", &format!("127.0.0.1:{}", adb.port)]);
        let files = data.join("files");
        if *disk_cache {
            cmd.arg("--cache-dir").arg(&files);
        }
        if let Some(r) = &run {
            cmd.env("RUNTIME_DIRECTORY", r.path());
        }
        let conn = Connector::spawn(cmd, dir, QUIET_LOG);
        let cache = run.as_ref().map(|r| r.path().to_owned());
        let (addr, mut windows) = (conn.addr, Vec::new());
        rt.block_on(async {
            let mut chans = Vec::new();
            for i in 0..phones {
                let ws = Ws::connect(addr, &format!("fw{i}")).await;
                ws.hello().await;
                let ch = ws.open().await;
                ws.bind(&ch).await;
                // Warm-up: each table's first pages, the WAL header.
                ws.invoke_id(&ch, "android_tap", json!({"settle": false, "x": 100, "y": 300}), &format!("warm_{i}"))
                    .await
                    .expect("tap");
                chans.push((ws, ch));
            }
            let (ws0, ch0) = (chans[0].0.clone(), chans[0].1.clone());
            screenshot(&ws0, addr, &ch0).await.expect("screenshot");
            observe_and_download(&ws0, addr, &ch0).await.expect("observe");
            tokio::time::sleep(Duration::from_millis(300)).await;
            // Taps: every phone at once, each call with its tool_call_id — first settled (the default, what xAgent
            // sends since issue 19: the ack waits for a still screen and carries the `effect`), then bare
            // (`settle: false`).
            for (label, args) in
                [("settled", json!({"x": 100, "y": 300})), ("bare", json!({"settle": false, "x": 100, "y": 300}))]
            {
                let t0 = epoch();
                let mut tasks = Vec::new();
                for (i, (ws, ch)) in chans.iter().enumerate() {
                    let (ws, ch, args) = (ws.clone(), ch.clone(), args.clone());
                    tasks.push(tokio::spawn(async move {
                        for k in 0..taps_per_phone {
                            let id = format!("fw_{label}_{i}_{k}");
                            ws.invoke_id(&ch, "android_tap", args.clone(), &id).await.expect("tap");
                        }
                    }));
                }
                for t in tasks {
                    t.await.unwrap();
                }
                windows.push((t0, epoch()));
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            let t0 = epoch();
            for _ in 0..heavy {
                screenshot(&ws0, addr, &ch0).await.expect("screenshot");
            }
            windows.push((t0, epoch()));
            tokio::time::sleep(Duration::from_millis(300)).await;
            let t0 = epoch();
            for _ in 0..heavy {
                observe_and_download(&ws0, addr, &ch0).await.expect("observe");
            }
            windows.push((t0, epoch()));
        });
        // SIGTERM to the connector (strace follows it out and flushes its log).
        if let Some(pid) = traced_pid(conn.pid()) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        let deadline = Instant::now() + Duration::from_secs(40);
        let mut conn = conn;
        while conn.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let cache_dir = if *disk_cache { None } else { cache.as_deref() };
        let w = strace_writes(&log, &data, cache_dir, &windows);
        let _ = std::fs::remove_file(&log);
        let taps = (phones * taps_per_phone) as f64;
        let per = |x: u64, n: f64| round3(x as f64 / n);
        let v = json!({
            "tap_settled": {"bytes": per(w[0].bytes, taps), "wal_bytes": per(w[0].wal_bytes, taps),
                    "fsyncs": per(w[0].syncs, taps), "n": taps},
            "tap": {"bytes": per(w[1].bytes, taps), "wal_bytes": per(w[1].wal_bytes, taps),
                    "fsyncs": per(w[1].syncs, taps), "n": taps},
            "screenshot_download": {"bytes": per(w[2].bytes, heavy as f64), "fsyncs": per(w[2].syncs, heavy as f64),
                                    "memory_cache_bytes": per(w[2].cache_bytes, heavy as f64), "n": heavy},
            "observe_download": {"bytes": per(w[3].bytes, heavy as f64), "fsyncs": per(w[3].syncs, heavy as f64),
                                 "memory_cache_bytes": per(w[3].cache_bytes, heavy as f64), "n": heavy},
        });
        eprintln!("footprint-writes {name}: {v}");
        let tap = w[0].bytes as f64 / taps;
        let reads = w[2].bytes + w[3].bytes;
        rep.row(
            &format!(
                "21 writes to persistent storage ({name}): per settled tap / bare tap ({phones}-phone burst) / \
                 screenshot / observe"
            ),
            format!(
                "{:.0} B ({:.2} fsync) / {:.0} B / {:.0} B / {:.0} B",
                tap,
                w[0].syncs as f64 / taps,
                w[1].bytes as f64 / taps,
                w[2].bytes as f64 / heavy as f64,
                w[3].bytes as f64 / heavy as f64
            ),
            "—".into(),
            "—".into(),
            "settled tap ≤ 4096 B; screenshot/observe: 0 B",
            (name == "this build").then_some(tap <= 4096.0 && reads == 0),
        );
        results.insert(name.clone(), v);
        drop(conn);
    }
    results.insert("phones".into(), json!(phones));
    rep.json.insert("footprint_writes".into(), Value::Object(results));
    for s in sims {
        sim_rt.block_on(s.shutdown());
    }
}
