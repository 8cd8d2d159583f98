//! Stuck phones (issue 11): calls that never end, cancelled at their deadline, while a healthy phone is served.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use xagent_adb_connector::sim::{SimConfig, SimPhone};

use crate::common::*;

/// Three phones stop answering (every `input` and every `sync:` STAT is held forever); `n_stuck` calls are sent to
/// them in waves of 16 per channel (the per-channel bound), each ending in `device_timeout` at a 3 s deadline cap.
/// Measured: the connector's threads and RSS before / during (max) / 2 s after, and a fourth, healthy phone's tap
/// latency while the others hang against the same phone alone, in the same run.
pub(crate) fn bench_hang(
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
            ws.invoke(ch, "android_tap", json!({"settle": false, "x": 100, "y": 300})).await.expect("healthy tap");
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
                                ("android_tap", json!({"settle": false, "x": 100, "y": 300}))
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
