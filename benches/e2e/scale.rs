//! Scenario 5: scale: many phones, many channels, sustained load.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use xagent_adb_connector::sim::{SimConfig, SimPhone};

use crate::common::*;

#[derive(Default)]
struct Lat {
    tap: Vec<f64>,
    shot: Vec<f64>,
    light: Vec<f64>,
    errors: Vec<String>,
}

pub(crate) fn bench_scale(sim_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, rep: &mut Report) {
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
                        match ws.invoke(&ch, "android_tap", json!({"settle": false, "x": x, "y": y})).await {
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
