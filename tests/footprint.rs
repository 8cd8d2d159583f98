//! Issue 21, "Storage writes: an SD card's lifetime", through the real path: the release-shaped binary, a real adb
//! server, simulated phones. What reaches persistent storage is read from the data dir itself: the SQLite WAL only
//! grows until a checkpoint (1000 pages), so in a fresh state its growth is exactly the bytes the connector
//! appended to it; every other file in the data dir is compared by name and size. (The figures — bytes and fsyncs
//! per call from strace — are the benchmark's, `bench/run.sh footprint-writes`.)

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::adb::{blocking, setup, start_sim, AdbServer};
use common::{http, ws, Server};
use serde_json::json;
use xagent_adb_connector::sim::SimPhone;

const BIN: &str = env!("CARGO_BIN_EXE_xagent-adb-connector");

async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(150), f).await.expect("test timed out");
}

/// Every file under `dir` (recursively) but the WAL and its index, with its size.
fn listing(dir: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            let p = e.path();
            if p.is_dir() {
                out.insert(format!("{}/", p.strip_prefix(dir).unwrap().display()), 0);
                stack.push(p);
            } else {
                let name = p.strip_prefix(dir).unwrap().display().to_string();
                if !name.ends_with("-wal") && !name.ends_with("-shm") {
                    out.insert(name, e.metadata().unwrap().len());
                }
            }
        }
    }
    out
}

fn wal_len(data: &Path) -> u64 {
    std::fs::metadata(data.join("connector.db-wal")).map(|m| m.len()).unwrap_or(0)
}

/// More simulated phones on the same adb server, each online before it returns.
async fn more_sims(adb: &Arc<AdbServer>, n: usize) -> Vec<SimPhone> {
    let mut sims = Vec::new();
    for _ in 0..n {
        let sim = start_sim().await;
        let (a, s) = (adb.clone(), sim.serial());
        blocking(move || {
            a.connect(&s);
            a.wait_state(&s, "device");
        })
        .await;
        sims.push(sim);
    }
    sims
}

/// Read-only calls counted so far in the audit log's aggregate records (`audit::reads`): tool → (calls, results).
fn read_aggregates(data: &Path) -> BTreeMap<String, (u64, Vec<String>)> {
    let db = rusqlite::Connection::open_with_flags(
        data.join("connector.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    let mut st = db
        .prepare("SELECT tool_id, arguments, result FROM audit WHERE tool_call_id IS NULL AND arguments LIKE '{\"read_calls\":%'")
        .unwrap();
    let mut out: BTreeMap<String, (u64, Vec<String>)> = BTreeMap::new();
    let rows =
        st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))).unwrap();
    for row in rows {
        let (tool, args, result) = row.unwrap();
        let a: serde_json::Value = serde_json::from_str(&args).unwrap();
        let e = out.entry(tool).or_default();
        e.0 += a["read_calls"]["calls"].as_u64().unwrap();
        e.1.push(result);
    }
    out
}

/// Audit rows of single calls (not aggregates) for `tool`.
fn single_rows(data: &Path, tool: &str) -> i64 {
    let db = rusqlite::Connection::open_with_flags(
        data.join("connector.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    db.query_row(
        "SELECT COUNT(*) FROM audit WHERE tool_id = ?1 AND arguments NOT LIKE '{\"read_calls\":%'",
        [tool],
        |r| r.get(0),
    )
    .unwrap()
}

fn audit_verify(data: &Path) {
    let out = std::process::Command::new(BIN).args(["audit", "verify", "--data-dir"]).arg(data).output().unwrap();
    assert!(out.status.success(), "audit verify: {}", String::from_utf8_lossy(&out.stdout));
}

/// Screenshots and observes with their downloads write nothing to the data dir — not a byte — while every call
/// that ran still reaches the audit chain: counted in memory, appended as one aggregate record per (channel,
/// device, tool) when the next side effect commits and when the connector shuts down gracefully; the chain
/// verifies. Fails on the old code, where each read appended its own audit row (~2.1 KiB of WAL) and no aggregate
/// existed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_and_observes_write_nothing_and_are_audited_as_counts() {
    bounded(async {
        let Some((adb, _sim, _)) = setup().await else { return };
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("state");
        let srv_args = ["--adb-server".to_owned(), format!("127.0.0.1:{}", adb.port)];
        let srv_args: Vec<&str> = srv_args.iter().map(String::as_str).collect();
        let mut srv = Server::start(&data, &srv_args, &[]);
        assert!(srv.runtime_dir.is_some(), "this test needs /dev/shm (tmpfs)");
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let ch = c.bind(None).await;
        // Warm-up: a screenshot, an observe and a tap (the state's first pages; the tap takes the warm-up reads'
        // counts into the chain).
        for tool in ["android_screenshot", "android_observe"] {
            let ack = c.invoke(&ch, tool, json!({})).await;
            assert!(ack["error"].is_null(), "{ack}");
        }
        let ack = c.tap(&ch, 100, 300).await;
        assert!(ack["error"].is_null(), "{ack}");
        let warm = read_aggregates(&data);
        assert_eq!(warm.get("android_screenshot").map(|a| a.0), Some(1), "{warm:?}");
        let before = listing(&data);
        let wal_before = wal_len(&data);

        // The burst window: ten of each, each with its download.
        let mut urls = Vec::new();
        for i in 0..10 {
            let shot = c.invoke(&ch, "android_screenshot", json!({"max_side": 300 + i})).await;
            assert!(shot["error"].is_null(), "{shot}");
            let obs = c.invoke(&ch, "android_observe", json!({"picture": true})).await;
            assert!(obs["error"].is_null(), "{obs}");
            for r in [&shot, &obs] {
                for f in r["payload"]["result"]["files"].as_array().into_iter().flatten() {
                    let url = f["download_url"].as_str().unwrap().to_owned();
                    let got = http(srv.addr, "GET", &url, &[], b"").await;
                    assert_eq!(got.status, 200);
                    urls.push(url);
                }
            }
        }
        assert!(urls.len() >= 10, "the screenshots came with files");
        assert_eq!(before, listing(&data), "no file of the data dir appeared, went or changed size");
        let appended = wal_len(&data) - wal_before;
        if appended != 0 {
            panic!(
                "20 read-only calls and their downloads wrote {appended} bytes to the WAL: {}",
                wal_breakdown(&data, wal_before)
            );
        }
        let db = rusqlite::Connection::open_with_flags(
            data.join("connector.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .unwrap();
        let rows: i64 = db.query_row("SELECT COUNT(*) FROM files", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 0, "the cache's index is not in the state database");
        let cache = srv.memory_cache_dir().expect("the cache lives under the runtime dir");
        assert!(std::fs::read_dir(&cache).unwrap().count() >= 1, "files are in {}", cache.display());
        assert_eq!(http(srv.addr, "GET", &urls[0], &[], b"").await.status, 404, "a download URL works once");

        // Trigger 1: the next side effect commits the counts with it, chained before it (at a point of its own: a
        // repeat of the warm-up's tap would be counted too, issue 48).
        let ack = c.tap(&ch, 100, 320).await;
        assert!(ack["error"].is_null(), "{ack}");
        let agg = read_aggregates(&data);
        assert_eq!(agg["android_screenshot"].0, 11, "{agg:?}");
        assert_eq!(agg["android_observe"].0, 11, "{agg:?}");
        assert!(agg.values().all(|a| a.1.iter().all(|r| r == "ok")), "{agg:?}");
        assert_eq!(single_rows(&data, "android_screenshot"), 0, "no per-call rows for reads");
        audit_verify(&data);

        // Trigger 2: a graceful shutdown (socket still open) appends what is left.
        for _ in 0..3 {
            let ack = c.invoke(&ch, "android_screenshot", json!({"max_side": 200})).await;
            assert!(ack["error"].is_null(), "{ack}");
        }
        let status = tokio::task::spawn_blocking(move || {
            let st = srv.term(Duration::from_secs(60));
            (st, srv)
        })
        .await
        .unwrap();
        assert!(status.0.is_some_and(|s| s.success()), "graceful exit: {:?}", status.0);
        let agg = read_aggregates(&data);
        assert_eq!(agg["android_screenshot"].0, 14, "the shutdown flushed the last three: {agg:?}");
        audit_verify(&data);
        drop(c);
    })
    .await;
}

/// Without any other trigger, read counts reach the chain within the flush interval (60 s in production;
/// shortened here through the debug-build-only test knob). Fails on the old code (no aggregate records).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_counts_are_flushed_periodically_without_other_writes() {
    bounded(async {
        let Some((adb, _sim, _)) = setup().await else { return };
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("state");
        let srv = Server::start(
            &data,
            &["--adb-server", &format!("127.0.0.1:{}", adb.port)],
            &[("XAGENT_TEST_READS_FLUSH_MS", "500")],
        );
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let ch = c.bind(None).await;
        for _ in 0..4 {
            let ack = c.invoke(&ch, "android_screenshot", json!({"max_side": 200})).await;
            assert!(ack["error"].is_null(), "{ack}");
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let n = read_aggregates(&data).get("android_screenshot").map_or(0, |a| a.0);
            if n == 4 {
                break;
            }
            assert!(n < 4, "counted {n} of 4 screenshots");
            assert!(Instant::now() < deadline, "the read counts were not flushed within 30 s (interval 0.5 s)");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        audit_verify(&data);
        drop(c);
        drop(srv);
    })
    .await;
}

/// What a stretch of the WAL holds: frames, commits, and frames per B-tree (read with SQLite's `dbstat` from the
/// database as it is now — a page's owner can only have changed if it was freed and reused, which a burst of
/// appends does not do). Printed by the footprint tests so that a figure over the bar says where the bytes went.
fn wal_breakdown(data: &Path, from: u64) -> String {
    let wal = std::fs::read(data.join("connector.db-wal")).unwrap_or_default();
    let page = u32::from_be_bytes(wal.get(8..12).map_or([0; 4], |b| b.try_into().unwrap())) as usize;
    let (mut frames, mut commits) = (0usize, 0usize);
    let mut pages: BTreeMap<u32, usize> = BTreeMap::new();
    let mut at = (from.max(32) - 32) / (page as u64 + 24) * (page as u64 + 24) + 32;
    while page > 0 && (at as usize) + 24 + page <= wal.len() {
        let h = &wal[at as usize..at as usize + 24];
        *pages.entry(u32::from_be_bytes(h[0..4].try_into().unwrap())).or_default() += 1;
        frames += 1;
        if u32::from_be_bytes(h[4..8].try_into().unwrap()) != 0 {
            commits += 1;
        }
        at += page as u64 + 24;
    }
    let db = rusqlite::Connection::open_with_flags(
        data.join("connector.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    let mut by_tree: BTreeMap<String, usize> = BTreeMap::new();
    for (p, n) in &pages {
        let name: String = db
            .query_row("SELECT name FROM dbstat WHERE pageno = ?1", [p], |r| r.get(0))
            .unwrap_or_else(|_| if *p == 1 { "page 1 (header)".into() } else { "free/other".into() });
        *by_tree.entry(name).or_default() += n;
    }
    format!("{frames} frames of {page} B in {commits} commits; frames by B-tree: {by_tree:?}")
}

/// A burst of taps on several phones — the tap xAgent sends: settled (the default since issue 19, whose ack waits
/// for the screen to be still and carries the `effect`), each with its `tool_call_id` — writes at most 4 KiB per
/// tap to persistent storage (the WAL; nothing else in the data dir changes). Fails on the old store (about 33 KiB
/// per tap: three transactions over six B-trees with 4 KiB pages) and on the store of issue 21's first round
/// (6.4 KiB per settled tap: the whole outcome with its effect in the idempotency record, which with 512-byte pages
/// took a page of its own per tap, and commits no longer shared once settled taps finish spread over time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settled_tap_burst_on_several_phones_writes_at_most_4_kib_per_tap() {
    const PHONES: usize = 5;
    bounded(async {
        let Some((adb, _sim, _)) = setup().await else { return };
        let _more = more_sims(&adb, PHONES - 1).await;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("state");
        let srv = Server::start(&data, &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
        let mut clients = Vec::new();
        for k in 0..PHONES {
            let mut c = ws(srv.addr, None).await;
            c.hello(None).await;
            let ch = c.bind(None).await;
            // Warm-up: first pages of each table.
            let p = json!({"tool_id": "android_tap", "arguments": {"x": 100, "y": 300, "connector_channel_id": ch},
                           "context": {"tool_call_id": format!("warm_{k}")}});
            let ack = c.request("tool.invoke", Some(&ch), p).await;
            assert!(ack["error"].is_null(), "{ack}");
            clients.push((c, ch));
        }
        let before = listing(&data);
        let wal_before = wal_len(&data);
        const PER_PHONE: usize = 20;
        let mut tasks = Vec::new();
        for (k, (mut c, ch)) in clients.into_iter().enumerate() {
            tasks.push(tokio::spawn(async move {
                for i in 0..PER_PHONE {
                    // No `settle` argument: the default, a settled tap.
                    let p = json!({"tool_id": "android_tap", "arguments": {"x": 100, "y": 300, "connector_channel_id": ch},
                                   "context": {"tool_call_id": format!("burst_{k}_{i}")}});
                    let ack = c.request("tool.invoke", Some(&ch), p).await;
                    assert!(ack["error"].is_null(), "{ack}");
                    assert!(ack["payload"]["result"]["effect"].is_object(), "a settled tap reports its effect: {ack}");
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let taps = (PHONES * PER_PHONE) as u64;
        let per_tap = (wal_len(&data) - wal_before) / taps;
        eprintln!("WAL bytes per settled tap in a burst on {PHONES} phones: {per_tap}");
        eprintln!("{}", wal_breakdown(&data, wal_before));
        assert_eq!(before, listing(&data), "only the WAL changed");
        assert!(per_tap <= 4096, "{per_tap} bytes written per tap (bar: 4096)");
    })
    .await;
}

/// `kill -9` in the middle of a tap burst on several phones: after the restart every acknowledged call has its
/// idempotency record (done) and its audit row, and `audit verify` passes. (The group commit acks a call only after
/// its transaction is in the WAL — in the kernel — which a killed process cannot take back.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_calls_survive_kill_9_mid_burst() {
    bounded(async {
        let Some((adb, _sim, _)) = setup().await else { return };
        let _more = more_sims(&adb, 2).await;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("state");
        let server = format!("127.0.0.1:{}", adb.port);
        let mut srv = Server::start(&data, &["--adb-server", &server], &[]);
        let acked: Arc<Mutex<Vec<String>>> = Arc::default();
        let mut tasks = Vec::new();
        for k in 0..3 {
            let mut c = ws(srv.addr, None).await;
            c.hello(None).await;
            let ch = c.bind(None).await;
            let acked = acked.clone();
            // Each task taps until its socket dies with the process (the harness's client panics then: the
            // panic ends the task, the ids acked before it are kept).
            tasks.push(tokio::spawn(async move {
                for i in 0.. {
                    let id = format!("kill_{k}_{i}");
                    // A point of its own per call: an identical repeat is counted in memory like a read (issue 48,
                    // `audit::budget`), so only distinct actions have a durable row per call.
                    let (x, y) = (100 + i % 800, 300 + 10 * k);
                    let p = json!({"tool_id": "android_tap", "arguments": {"settle": false, "x": x, "y": y, "connector_channel_id": ch},
                                   "context": {"tool_call_id": id}});
                    let ack = c.request("tool.invoke", Some(&ch), p).await;
                    if ack["type"] == "tool.invoke.ack" && ack["error"].is_null() {
                        acked.lock().unwrap().push(id);
                    }
                }
            }));
        }
        // Let the burst run, then kill while calls are in flight.
        let deadline = Instant::now() + Duration::from_secs(30);
        while acked.lock().unwrap().len() < 30 {
            assert!(Instant::now() < deadline, "the burst did not get going");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        srv.kill9();
        for t in tasks {
            let _ = t.await;
        }
        let acked = acked.lock().unwrap().clone();
        assert!(acked.len() >= 30);

        // Restarted on the same state: it opens (recovering the WAL) and the chain is intact.
        let srv = Server::start(&data, &["--adb-server", &server], &[]);
        let out = std::process::Command::new(BIN).args(["audit", "verify", "--data-dir"]).arg(&data).output().unwrap();
        assert!(out.status.success(), "audit verify: {}", String::from_utf8_lossy(&out.stdout));
        let db = rusqlite::Connection::open_with_flags(
            data.join("connector.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .unwrap();
        for id in &acked {
            // Done = its outcome is recorded (migration 9: beside the record, same id).
            let done: bool = db
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM tool_outcomes WHERE id = c.id) FROM tool_calls c WHERE tool_call_id = ?1",
                    [id],
                    |r| r.get(0),
                )
                .unwrap_or_else(|e| panic!("acked call {id} has no idempotency record after kill -9: {e}"));
            assert!(done, "acked call {id} has no recorded outcome after kill -9");
            let audited: i64 = db
                .query_row("SELECT COUNT(*) FROM audit WHERE tool_call_id = ?1 AND result = 'ok'", [id], |r| r.get(0))
                .unwrap();
            assert_eq!(audited, 1, "acked call {id} has no audit row after kill -9");
        }
        drop(srv);
    })
    .await;
}
