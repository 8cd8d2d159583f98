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
//!
//! One file per scenario (`tap.rs`, `states.rs`, …); `common.rs` is what they share; this file runs the ones
//! selected on the command line and writes the report.

mod agent_cost;
mod agent_step;
mod breakdown;
mod common;
mod cost_model;
mod dashboard;
mod footprint;
mod footprint_writes;
mod hang;
mod live;
mod observe;
mod scale;
mod screenshot;
mod screenshot_usb;
mod settle;
mod states;
mod tap;
mod ui_dump;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};

use common::*;

fn main() {
    // `cargo bench` passes `--bench`; a filter argument selects scenarios by name (tap, states, screenshot, ui,
    // breakdown, observe, settle, screenshot-usb, agent-step, scale, footprint, footprint-writes, hang, live).
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
            tap::bench_tap(&rt, &p, n_tap, &mut rep);
            eprintln!("[{:.0} s] tap done", started.elapsed().as_secs_f64());
        }
        if want("states") {
            let sim = sims[0].clone();
            states::bench_states(&rt, &p, &sim, n_tap, &mut rep);
            eprintln!("[{:.0} s] states done", started.elapsed().as_secs_f64());
        }
        if want("screenshot") {
            screenshot::bench_screenshot(&rt, &p, n_heavy, &mut rep);
            eprintln!("[{:.0} s] screenshot done", started.elapsed().as_secs_f64());
        }
        if want("ui") {
            ui_dump::bench_ui_dump(&rt, &p, n_heavy, &mut rep);
            eprintln!("[{:.0} s] ui dump done", started.elapsed().as_secs_f64());
        }
        if want("footprint") {
            let sim = sims[0].clone();
            footprint::bench_footprint(&sim_rt, &p, &sim, if q { 3 } else { 10 }, &mut rep);
            eprintln!("[{:.0} s] footprint done", started.elapsed().as_secs_f64());
        }
        if want("observe") {
            observe::bench_observe(&rt, &p, n_heavy, &mut rep);
            eprintln!("[{:.0} s] observe done", started.elapsed().as_secs_f64());
        }
        if want("breakdown") {
            breakdown::bench_breakdown(&sim_rt, &rt, &p, if q { 5 } else { 15 }, &mut rep);
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
        screenshot_usb::bench_screenshot_usb(&sim_rt, &rt, n_heavy, &mut rep);
        eprintln!("[{:.0} s] screenshot-usb done", started.elapsed().as_secs_f64());
    }
    if want("agent-step") {
        agent_step::bench_agent_step(&sim_rt, &rt, &mut rep);
        eprintln!("[{:.0} s] agent-step done", started.elapsed().as_secs_f64());
    }
    if want("agent-cost") {
        agent_cost::bench_agent_cost(&sim_rt, &mut rep);
        eprintln!("[{:.0} s] agent-cost done", started.elapsed().as_secs_f64());
    }
    if want("settle") {
        settle::bench_settle(&sim_rt, &rt, n_heavy, &mut rep);
        eprintln!("[{:.0} s] settle done", started.elapsed().as_secs_f64());
    }
    if want("footprint-writes") {
        footprint_writes::bench_footprint_writes(&sim_rt, &rt, &mut rep);
        eprintln!("[{:.0} s] footprint-writes done", started.elapsed().as_secs_f64());
    }
    if want("hang") {
        hang::bench_hang(&sim_rt, &rt, env_usize("BENCH_HANG_CALLS", if q { 100 } else { 500 }), 300, &mut rep);
        eprintln!("[{:.0} s] hang done", started.elapsed().as_secs_f64());
    }
    if want("live") {
        live::bench_live(&sim_rt, &rt, &mut rep);
        eprintln!("[{:.0} s] live done", started.elapsed().as_secs_f64());
    }
    if want("scale") {
        scale::bench_scale(&sim_rt, &rt, &mut rep);
        eprintln!("[{:.0} s] scale done", started.elapsed().as_secs_f64());
    }

    // A run of some scenarios keeps the others' figures: results.json holds the latest figures of every scenario
    // (BENCHMARKS.md's dashboard is generated from it), not only this run's.
    let out = std::env::var("BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/results.json"));
    let earlier = std::fs::read_to_string(&out).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
    if let Some(Value::Object(mut merged)) = earlier {
        // Each scenario keeps the machine facts of the run that measured it (`runs`; the dashboard names them).
        let machine = rep.json.get("machine").cloned().unwrap_or(Value::Null);
        let mut runs = merged.remove("runs").and_then(|r| r.as_object().cloned()).unwrap_or_default();
        for scenario in rep.json.keys().filter(|k| *k != "machine") {
            runs.insert(scenario.clone(), machine.clone());
        }
        merged.extend(std::mem::take(&mut rep.json));
        merged.insert("runs".into(), Value::Object(runs));
        rep.json = merged;
    }
    rep.json.insert("total_secs".into(), json!(round3(started.elapsed().as_secs_f64())));
    rep.json
        .insert("loadavg_at_end".into(), json!(std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()));
    let table = rep.table();
    rep.json.insert("table_markdown".into(), json!(table));
    if let Some(d) = out.parent() {
        let _ = std::fs::create_dir_all(d);
    }
    std::fs::write(&out, serde_json::to_string_pretty(&Value::Object(rep.json)).unwrap()).expect("write results");
    println!("\n{table}\nresults: {} ({:.0} s)", out.display(), started.elapsed().as_secs_f64());
    if std::env::var("BENCH_OUT").is_err() {
        update_dashboard(&out);
    }
}

/// Rewrites BENCHMARKS.md's dashboard from the results just written (and `bench/targets.json`).
fn update_dashboard(results: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read_json = |p: &Path| -> Result<Value, String> {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
    };
    let doc_path = root.join("BENCHMARKS.md");
    let updated = (|| {
        let block = dashboard::table(&read_json(results)?, &read_json(&root.join("bench/targets.json"))?)?;
        let doc = std::fs::read_to_string(&doc_path).map_err(|e| e.to_string())?;
        let doc = dashboard::splice(&doc, &block)?;
        // The agent-cost table (issue 49), once a run has measured it.
        let results = read_json(results)?;
        if results.get("agent_cost").is_none() {
            return Ok(doc);
        }
        let cost = dashboard::cost_table(&results, &read_json(&root.join("bench/targets.json"))?)?;
        dashboard::splice_cost(&doc, &cost)
    })();
    match updated.and_then(|doc| std::fs::write(&doc_path, doc).map_err(|e| e.to_string())) {
        Ok(()) => println!("BENCHMARKS.md: dashboard rewritten"),
        Err(e) => println!("BENCHMARKS.md: dashboard not rewritten: {e}"),
    }
}
