//! Issue 48 item 1: one channel cannot erase the audit evidence. The real binary, the real adb server and the
//! simulated phone; small settings (`--audit-max-records 500`, `--audit-channel-budget 1000`) stand in for the
//! defaults (200,000 and 20,000) so a flood of thousands shows what one of hundreds of thousands did.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_xagent-adb-connector");

/// One audit record as the test reads it back: (seq, channel, tool, arguments, tool_call_id).
#[derive(Clone, Debug)]
struct Rec {
    seq: i64,
    channel: String,
    tool: String,
    args: String,
}

/// Every record of the archive file, decoded by hand (header line `XAA1 {json}\n`, then `bytes` of raw deflate of
/// one JSON record per line) — the format is documented in `src/audit/archive.rs`, read here independently.
fn archive_records(file: &Path) -> Vec<Rec> {
    let Ok(bytes) = std::fs::read(file) else { return Vec::new() };
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let nl = at + bytes[at..].iter().position(|b| *b == b'\n').expect("a header line");
        let line = std::str::from_utf8(&bytes[at..nl]).unwrap();
        let header: Value = serde_json::from_str(line.strip_prefix("XAA1 ").expect("XAA1 header")).unwrap();
        let n = header["bytes"].as_u64().unwrap() as usize;
        let body = &bytes[nl + 1..nl + 1 + n];
        let mut text = String::new();
        flate2::read::DeflateDecoder::new(body).read_to_string(&mut text).unwrap();
        for l in text.lines() {
            let r: Value = serde_json::from_str(l).unwrap();
            out.push(Rec {
                seq: r["seq"].as_i64().unwrap(),
                channel: r["channel_id"].as_str().unwrap().to_owned(),
                tool: r["tool_id"].as_str().unwrap().to_owned(),
                args: r["arguments"].as_str().unwrap().to_owned(),
            });
        }
        at = nl + 1 + n;
    }
    out
}

fn db_records(db: &Path) -> Vec<Rec> {
    let db = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut st = db.prepare("SELECT seq, channel_id, tool_id, arguments FROM audit ORDER BY seq").unwrap();
    st.query_map([], |r| Ok(Rec { seq: r.get(0)?, channel: r.get(1)?, tool: r.get(2)?, args: r.get(3)? }))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn verify(data: &Path) -> (Option<i32>, String) {
    let out = std::process::Command::new(BIN).args(["audit", "verify", "--data-dir"]).arg(data).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
}

/// Sends `calls` on `ch`, at most `window` in flight; every answer must be a success.
async fn flood(c: &mut Client, ch: &str, calls: Vec<(&'static str, Value)>, window: usize) {
    let mut pending: HashMap<String, usize> = HashMap::new();
    let mut next = 0;
    let total = calls.len();
    let mut done = 0;
    while done < total {
        while pending.len() < window && next < total {
            let (tool, mut args) = calls[next].clone();
            args["connector_channel_id"] = json!(ch);
            args["settle"] = json!(false);
            let (_, rid) = c.send("tool.invoke", Some(ch), json!({"tool_id": tool, "arguments": args})).await;
            pending.insert(rid, next);
            next += 1;
        }
        let v = c.recv().await;
        let Some(rid) = v["request_id"].as_str() else { continue };
        if let Some(i) = pending.remove(rid) {
            assert!(v.get("error").is_none() && v["payload"]["error"].is_null(), "call {i} {:?}: {v}", calls[i]);
            done += 1;
        }
    }
}

/// 5,000 harmless side effects from one channel (key presses repeated, taps at distinct points) with a 500-record
/// cap: every earlier record of the other channel, and every record (all are younger than the 90-day retention),
/// is still in the database or the archive; every call is in the chain, as a record or a count; `audit verify`
/// passes — and fails once records younger than the retention period are cut another way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_from_one_channel_leaves_every_young_record_and_verify_catches_a_cut() {
    tokio::time::timeout(Duration::from_secs(900), async {
        let flags = ["--audit-max-records", "500", "--audit-channel-budget", "1000"];
        let mut r = common::rig::Rig::with(Default::default(), &flags, None).await;
        let data = r.dir.path().to_owned();
        // The other channel's evidence: five taps at points of their own, a key; then it lets the phone go.
        let a = r.ch.clone();
        for i in 0..5 {
            r.ok("android_tap", json!({"x": 300 + i, "y": 700})).await;
        }
        r.ok("android_key", json!({"key": "BACK"})).await;
        let out = r.c.request("auth.logout", Some(&a), json!({})).await;
        assert!(out.get("error").is_none(), "{out}");
        // The flooding channel on the same phone.
        let b = r.c.bind(None).await;
        let mut calls: Vec<(&'static str, Value)> = Vec::new();
        const FLOOD: usize = 5_000;
        for i in 0..FLOOD {
            calls.push(match i % 5 {
                // 2,000 taps, each at a point of its own (a distinct action each).
                0 | 1 => ("android_tap", json!({"x": 20 + (i / 5) % 1000, "y": 30 + 2 * (i % 5)})),
                2 | 4 => ("android_key", json!({"key": "VOLUME_DOWN"})),
                _ => ("android_key", json!({"key": "VOLUME_UP"})),
            });
        }
        let started = Instant::now();
        flood(&mut r.c, &b, calls, 12).await;
        let took = started.elapsed();
        // Time for the last prune (woken every 50 appended records, else once a minute), then a graceful stop
        // flushes the counts.
        tokio::time::sleep(Duration::from_secs(2)).await;
        // The cap bit: counted for the alert (monitoring/: XagentAuditCapBit).
        let metrics = get(r.srv.addr, "/metrics").await.text();
        let archived_metric: u64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix("xagent_audit_archived_records_total "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no xagent_audit_archived_records_total: {metrics}"));
        assert!(archived_metric > 0, "{metrics}");
        r.srv.term(Duration::from_secs(60)).expect("the connector stops on SIGTERM");
        let logs = r.srv.logs().join("\n");

        let archived = archive_records(&data.join("audit-archive.xaa"));
        let in_db = db_records(&data.join("connector.db"));
        eprintln!(
            "{FLOOD} side effects in {took:?}: {} records in the database, {} in the archive",
            in_db.len(),
            archived.len()
        );
        assert!(!archived.is_empty(), "the cap bit: records went to the archive");
        assert!(in_db.len() <= 500 + 60 + 100, "the database keeps about its cap: {}", in_db.len());
        // Every record ever appended is somewhere: seqs 1..=last, each once.
        let all: Vec<&Rec> = archived.iter().chain(in_db.iter()).collect();
        let seqs: BTreeSet<i64> = all.iter().map(|r| r.seq).collect();
        let last = *seqs.iter().next_back().unwrap();
        assert_eq!(seqs.len() as i64, last, "a record is missing or archived twice");
        assert_eq!(seqs.iter().next(), Some(&1));
        // The other channel's records, every one.
        let of_a: Vec<&&Rec> = all.iter().filter(|r| r.channel == a).collect();
        for i in 0..5 {
            assert!(
                of_a.iter().any(|r| r.tool == "android_tap" && r.args.contains(&format!("\"x\":{}", 300 + i))),
                "tap {i} of the other channel is gone: {of_a:?}"
            );
        }
        assert!(of_a.iter().any(|r| r.args.contains("BACK")), "{of_a:?}");
        // Every call of the flood is in the chain: a record of its own or counted.
        let mut individual = 0u64;
        let mut counted: HashMap<&str, u64> = HashMap::new();
        for rec in all.iter().filter(|r| r.channel == b && r.tool.starts_with("android_")) {
            let v: Value = serde_json::from_str(&rec.args).unwrap_or(Value::Null);
            match ["repeated_calls", "budget_calls"].into_iter().find(|m| v.get(m).is_some()) {
                Some(m) => *counted.entry(m).or_default() += v[m]["calls"].as_u64().unwrap(),
                None => individual += 1,
            }
        }
        eprintln!("flood: {individual} records of their own, counted {counted:?}");
        assert_eq!(individual + counted.values().sum::<u64>(), FLOOD as u64, "every call is in the chain");
        assert!(individual <= 1000, "the channel budget holds: {individual}");
        assert!(counted.get("repeated_calls").copied().unwrap_or(0) >= 2_990, "repeats counted: {counted:?}");
        assert!(counted.get("budget_calls").copied().unwrap_or(0) >= 900, "past the budget, counted: {counted:?}");
        assert!(logs.contains("moved records younger than the retention period to the archive"), "the cap bit, said");
        assert!(logs.contains("spent its budget of individual records"), "the budget bit, said");

        let (code, out) = verify(&data);
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("audit archive intact"), "{out}");

        // Records younger than the retention period cut another way: the oldest 100 rows of the database deleted
        // and the checkpoint moved along (what a record cap without the archive did). The chain still links.
        let db = rusqlite::Connection::open(data.join("connector.db")).unwrap();
        let first: i64 = db.query_row("SELECT MIN(seq) FROM audit", [], |r| r.get(0)).unwrap();
        let cut = first + 99;
        db.execute_batch(&format!(
            "UPDATE audit_checkpoint SET seq = {cut}, hash = (SELECT lower(hex(hash)) FROM audit WHERE seq = {cut}),
                    last_time_ms = (SELECT time_ms FROM audit WHERE seq = {cut}) WHERE id = 1;
             DELETE FROM audit WHERE seq <= {cut};"
        ))
        .unwrap();
        drop(db);
        let (code, out) = verify(&data);
        assert_eq!(code, Some(1), "young records cut went unnoticed: {out}");
        assert!(out.contains("evidence is missing"), "{out}");
        eprintln!("audit verify after the cut: {}", out.trim());
        // And with the archive gone, too.
        std::fs::remove_file(data.join("audit-archive.xaa")).unwrap();
        let (code, out) = verify(&data);
        assert_eq!(code, Some(1), "{out}");
    })
    .await
    .expect("timed out");
}

/// With no room in the archive the record cap removes nothing young: the records stay, the connector stops storing
/// side effects one by one (they are counted), says so in its log and in `/health`, and `audit verify` passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_archive_keeps_every_record_counts_side_effects_and_says_so() {
    tokio::time::timeout(Duration::from_secs(600), async {
        let flags = ["--audit-max-records", "100", "--audit-archive-max-bytes", "1KiB"];
        let mut r = common::rig::Rig::with(Default::default(), &flags, None).await;
        let data = r.dir.path().to_owned();
        let ch = r.ch.clone();
        const TAPS: usize = 600;
        let calls: Vec<(&'static str, Value)> =
            (0..TAPS).map(|i| ("android_tap", json!({"x": 20 + i % 1000, "y": 40 + 2 * (i / 1000)}))).collect();
        flood(&mut r.c, &ch, calls, 12).await;
        // Pruning runs as a tenth of the cap is appended: wait until /health says the log is full.
        let deadline = Instant::now() + Duration::from_secs(90);
        let health = loop {
            let h = get(r.srv.addr, "/health").await.json();
            if h["problems"].to_string().contains("audit log is full") {
                break h;
            }
            assert!(Instant::now() < deadline, "/health never said the audit log is full: {h}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(health["status"], "degraded", "{health}");
        let metrics = get(r.srv.addr, "/metrics").await.text();
        assert!(metrics.lines().any(|l| l == "xagent_audit_full 1"), "{metrics}");
        // Now every side effect is counted: a new distinct tap writes no record of its own.
        let before = db_records(&data.join("connector.db")).len();
        r.ok("android_tap", json!({"x": 500, "y": 1500})).await;
        r.srv.term(Duration::from_secs(60)).expect("the connector stops on SIGTERM");
        let logs = r.srv.logs().join("\n");
        assert!(logs.contains("audit log FULL"), "the log says so");
        let recs = db_records(&data.join("connector.db"));
        // What the archive took before it was full (the bind's lease records fit in its 1 KiB) is there; nothing
        // else left the database.
        let file = data.join("audit-archive.xaa");
        let archived = if file.exists() { archive_records(&file) } else { Vec::new() };
        let seqs: BTreeSet<i64> = recs.iter().chain(archived.iter()).map(|r| r.seq).collect();
        assert_eq!(seqs.iter().next(), Some(&1), "no record removed: the archive had no room");
        assert_eq!(seqs.len() as i64, *seqs.iter().next_back().unwrap(), "no record missing");
        assert!(archived.len() < 10, "the archive holds only what fitted in 1 KiB: {}", archived.len());
        assert!(recs.len() > 100, "the cap was exceeded rather than young records deleted: {}", recs.len());
        let single = recs.iter().filter(|r| r.tool == "android_tap" && r.args.contains("\"x\":500")).count();
        assert_eq!(single, 0, "a side effect of a full log is counted, not recorded: {before} → {}", recs.len());
        let counted: u64 = recs
            .iter()
            .filter_map(|r| serde_json::from_str::<Value>(&r.args).ok()?.get("budget_calls")?["calls"].as_u64())
            .sum();
        assert!(counted >= 1, "the tap is counted");
        assert!(
            !data.join("audit-archive.xaa").exists()
                || std::fs::metadata(data.join("audit-archive.xaa")).unwrap().len() <= 1024
        );
        let (code, out) = verify(&data);
        assert_eq!(code, Some(0), "{out}");
    })
    .await
    .expect("timed out");
}
